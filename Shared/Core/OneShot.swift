import Synchronization

/// A value set at most once: the first `fulfill` wins and wakes every present and future `value`.
///
/// Used to race work against a deadline without waiting for the loser (a blocking C call that
/// cannot be cancelled), and for shutdown signals.
public final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Sets the value; returns false when it was already set (the call changes nothing then).
    @discardableResult
    public func fulfill(_ value: Value) -> Bool {
        let waiters: [CheckedContinuation<Value, Never>]? = state.withLock { state in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(returning: value) }
        return true
    }

    public var isFulfilled: Bool { state.withLock { $0.value != nil } }

    public var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready: Value? = state.withLock { state in
                    if let value = state.value { return value }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

/// Runs `body` with a deadline. Returns its result, or `onTimeout` when the deadline passes first;
/// the body keeps running in the background then (its result is dropped), so use this only for
/// work that is safe to abandon, such as a health check.
public func withDeadline<T: Sendable>(
    _ deadline: Duration, onTimeout: T,
    _ body: @escaping @Sendable () async -> T
) async -> T {
    let result = OneShot<T>()
    let work = Task { result.fulfill(await body()) }
    let timer = Task {
        try? await Task.sleep(for: deadline)
        if result.fulfill(onTimeout) { work.cancel() }
    }
    let value = await result.value
    timer.cancel()
    return value
}
