import Foundation

/// Time as the SDK sees it: the current wall-clock moment, sleeping, and delayed work.
///
/// Injected so tests drive time by hand (no real sleeps); `SystemClock` is the real one.
/// Event timestamps, session arithmetic and the flush timers (3 s after a track, 5 s after
/// configure) all read this clock.
public protocol BuzzKitClock: Sendable {
    /// The current moment.
    func now() -> Date
    /// Suspends for `seconds` (returns early, without throwing, when the task is cancelled).
    func sleep(seconds: TimeInterval) async
    /// Runs `work` once after `seconds`, unless the returned token is cancelled first.
    @discardableResult
    func schedule(after seconds: TimeInterval, _ work: @escaping @Sendable () async -> Void) -> ScheduledWork
}

/// A handle on work scheduled with `BuzzKitClock.schedule(after:_:)`.
public final class ScheduledWork: Sendable {
    private let onCancel: @Sendable () -> Void

    public init(onCancel: @escaping @Sendable () -> Void) { self.onCancel = onCancel }

    /// Prevents the work from running if it has not started yet.
    public func cancel() { onCancel() }
}

/// The real clock: `Date()` and `Task.sleep`.
public struct SystemClock: BuzzKitClock {
    public init() {}

    public func now() -> Date { Date() }

    public func sleep(seconds: TimeInterval) async {
        try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
    }

    @discardableResult
    public func schedule(after seconds: TimeInterval, _ work: @escaping @Sendable () async -> Void) -> ScheduledWork {
        let task = Task {
            try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
            guard !Task.isCancelled else { return }
            await work()
        }
        return ScheduledWork { task.cancel() }
    }
}
