import Synchronization

/// A value set at most once: the first `fulfill` wins and wakes every present and future waiter.
///
/// The one way a BuzzKit task waits for something to happen (a shutdown request, a service's
/// `run()` returning, a handshake in a test). Every wait honours cancellation: a waiter whose
/// task is cancelled is removed and resumed at once, so a wait raced against something else
/// (`wait(atMost:)`, a task group) never leaves a parked task behind.
public final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        /// Parked waiters by ticket; nil resumes one whose task was cancelled.
        var waiters: [UInt64: CheckedContinuation<Value?, Never>] = [:]
        var nextTicket: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Sets the value; returns false when it was already set (the call changes nothing then).
    @discardableResult
    public func fulfill(_ value: Value) -> Bool {
        let waiters: [CheckedContinuation<Value?, Never>]? = state.withLock { state in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(returning: value) }
        return true
    }

    public var isFulfilled: Bool { state.withLock { $0.value != nil } }

    /// Tasks parked in `wait()` right now. Bounded by the number of tasks waiting at once, never
    /// by how often something waited (the tests of the loops read it).
    public var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// The value once it is set. Throws `CancellationError` when the waiting task is cancelled
    /// first; its waiter is gone by then.
    public func wait() async throws(CancellationError) -> Value {
        if let value = state.withLock({ $0.value }) { return value }
        let ticket = state.withLock { state in
            defer { state.nextTicket &+= 1 }
            return state.nextTicket
        }
        let value: Value? = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                // Registered under the lock that `onCancel` takes: a cancellation either finds the
                // waiter here, or came before and `Task.isCancelled` is already true.
                let ready: Value?? = state.withLock { state in
                    if let value = state.value { return .some(value) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[ticket] = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: ticket) }?.resume(returning: nil)
        }
        guard let value else { throw CancellationError() }
        return value
    }

    /// The value, or nil when `timeout` passes first on `clock` or the task is cancelled. Nothing
    /// is left waiting once it returns (both halves of the race are child tasks, the loser cancelled).
    public func wait(atMost timeout: Duration, clock: any Clock<Duration> = ContinuousClock()) async -> Value? {
        if let value = state.withLock({ $0.value }) { return value }
        if Task.isCancelled { return nil }
        return await withTaskGroup(of: Value?.self) { group in
            group.addTask { try? await self.wait() }
            group.addTask {
                try? await clock.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}

/// Runs `body` with a deadline. Returns its result, or `onTimeout` when the deadline passes first
/// (or the calling task is cancelled); the body is cancelled then but keeps running in the
/// background until it notices (its result is dropped), so use this only for work that is safe to
/// abandon and may be stuck in a call that cannot be cancelled, such as a readiness check.
public func withDeadline<T: Sendable>(
    _ deadline: Duration, onTimeout: T,
    _ body: @escaping @Sendable () async -> T
) async -> T {
    let result = OneShot<T>()
    let work = Task { result.fulfill(await body()) }
    if let value = await result.wait(atMost: deadline) { return value }
    work.cancel()
    return onTimeout
}
