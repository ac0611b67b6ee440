import Synchronization

/// A `Clock` that moves only when a test calls `advance(by:)`. Sleeps park until their deadline
/// is reached and honour cancellation (a cancelled sleeper is removed and throws), so a test can
/// count what is parked at any moment.
final class TestClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [UInt64: Sleeper] = [:]
        var nextTicket: UInt64 = 0
    }

    private let state = Mutex(State())

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let ticket = state.withLock { state in
            defer { state.nextTicket += 1 }
            return state.nextTicket
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[ticket] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: ticket) }?.continuation.resume(
                throwing: CancellationError())
        }
    }

    /// Sleeps parked now.
    var sleeping: Int { state.withLock { $0.sleepers.count } }

    /// The deadlines of the parked sleeps, as durations from now.
    var pendingWaits: [Duration] {
        state.withLock { state in state.sleepers.values.map { state.now.duration(to: $0.deadline) }.sorted() }
    }

    /// Moves time forward by `duration` and wakes every sleep due by then.
    func advance(by duration: Duration) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let tickets = state.sleepers.filter { $0.value.deadline <= now }.map(\.key)
            return tickets.compactMap { state.sleepers.removeValue(forKey: $0)?.continuation }
        }
        for continuation in due { continuation.resume() }
    }
}

/// Polls `condition` (yielding, then sleeping 1 ms of real time) until it holds; false after
/// `limit` of real time (generous: a loaded machine). For reaching a state another task gets to,
/// not for timing anything.
func eventually(limit: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        await Task.yield()
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// A count shared between a test and the tasks it starts.
final class Tally: Sendable {
    private let value = Mutex(0)
    /// Adds one; returns the new count.
    @discardableResult
    func add() -> Int {
        value.withLock { value in
            value += 1
            return value
        }
    }
    var current: Int { value.withLock { $0 } }
}
