/// The skeleton of every background loop in BuzzKit (sweepers, trimmers, run workers, flushers,
/// listeners): run the body, wait the interval or until stopped, again; a failure is logged and
/// counted, then waited out with a growing backoff; `stop()` or cancelling the task ends the loop
/// at once when it is waiting, or when the body in flight returns.
///
/// ```swift
/// final class Sweeper: Service {
///     let loop: BackgroundLoop
///     func run() async throws { await loop.run { try await sweep() } }
///     func shutdown() async { loop.stop() }
/// }
/// ```
///
/// Waiting is `OneShot.wait(atMost:)`: a sleep raced against the stop signal in two child tasks,
/// the loser cancelled, so nothing outlives a period (a loop waits with at most one parked waiter,
/// however many periods it ran). The clock is injected so tests drive time.
///
/// Metrics (labelled `loop`): `bk_background_loop_runs_total` counts bodies that returned,
/// `bk_background_loop_failures_total` bodies that threw. The first failure after a success is
/// logged at warning, the ones that follow it at debug (an outage of a dependency writes one
/// warning per loop, not one per period; the counter has them all).
public final class BackgroundLoop: Sendable {
    /// What the loop does after a body that succeeded.
    public enum Next: Sendable, Equatable {
        /// Wait the loop's interval (the usual answer).
        case interval
        /// Run the body again at once (it left work behind, e.g. it claimed a full batch).
        case immediately
        /// Wait this long instead of the interval.
        case after(Duration)
    }

    /// Where the loop's first body runs.
    public enum Start: Sendable {
        /// At once when `run` is called (the default: a sweep at start catches up on downtime).
        case immediately
        /// After the first interval.
        case afterInterval
    }

    /// Names the loop in logs and metrics ("outbox-sweeper", "workflow.runs.1").
    public let name: String
    public let interval: Duration
    public let start: Start
    /// The wait after a failure, doubled after each failure in a row up to its upper bound.
    public let failureBackoff: ClosedRange<Duration>
    private let clock: any Clock<Duration>
    private let logger: Logger
    private let stopped = OneShot<Void>()
    /// Bodies that completed, and that failed (also `bk_background_loop_*_total`).
    public let runs: Counter
    public let failures: Counter

    /// - Parameters:
    ///   - failureBackoff: defaults to `interval...interval` (a failed body waits like any other).
    ///   - metrics: where the loop's two counters are registered (the service's registry); nil
    ///     only for a loop inside a library part that has no registry and counts its failures
    ///     itself (`StreamConsumer`'s claim renewal, in its statistics).
    ///   - clock: `ContinuousClock()` unless a test drives time.
    public init(
        name: String, interval: Duration, start: Start = .immediately,
        failureBackoff: ClosedRange<Duration>? = nil,
        logger: Logger, metrics: MetricsRegistry?, clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.name = name
        self.interval = interval
        self.start = start
        self.failureBackoff = failureBackoff ?? interval...interval
        self.logger = logger
        self.clock = clock
        runs =
            metrics?.counter(
                "bk_background_loop_runs_total", help: "Bodies of a background loop that completed",
                labels: [("loop", name)]) ?? Counter(labels: "")
        failures =
            metrics?.counter(
                "bk_background_loop_failures_total", help: "Bodies of a background loop that failed (logged, retried)",
                labels: [("loop", name)]) ?? Counter(labels: "")
    }

    /// Asks `run` to return: at once when waiting, after the body in flight otherwise. Idempotent.
    public func stop() { stopped.fulfill(()) }

    public var isStopped: Bool { stopped.isFulfilled }

    /// Tasks parked on the loop's stop signal now: 0 or 1 for a loop, whatever it ran (tests).
    public var waiters: Int { stopped.waiterCount }

    /// Runs `body` until `stop()` or cancellation, waiting the interval after each run.
    public func run(_ body: () async throws -> Void) async {
        await runPaced({
            try await body()
            return .interval
        })
    }

    /// Runs `body` until `stop()` or cancellation; after each run waits what the body answered.
    public func runPaced(_ body: () async throws -> Next) async {
        if start == .afterInterval, !(await pause(interval)) { return }
        var failuresInRow = 0
        while !isStopped, !Task.isCancelled {
            let wait: Duration?
            do {
                switch try await body() {
                case .interval: wait = interval
                case .immediately: wait = nil
                case .after(let duration): wait = duration
                }
                runs.increment()
                failuresInRow = 0
            } catch {
                // A body cut short by the stop or the cancellation that ends the loop did not fail.
                if isStopped || Task.isCancelled { return }
                failuresInRow += 1
                failures.increment()
                wait = backoff(afterFailures: failuresInRow)
                logger.log(
                    failuresInRow == 1 ? .warning : .debug, "background loop failed",
                    metadata: [
                        "loop": name, "error": "\(error)", "failures.in_row": String(failuresInRow),
                        "retry.in_ms": String(wait!.milliseconds)
                    ])
            }
            if let wait, !(await pause(wait)) { return }
        }
    }

    /// Waits `duration` unless the loop is stopped or the task cancelled first; true when the
    /// whole duration passed (the loop goes on), false when it should end.
    public func pause(_ duration: Duration) async -> Bool {
        if duration > .zero { _ = await stopped.wait(atMost: duration, clock: clock) }
        return !isStopped && !Task.isCancelled
    }

    /// Runs `operation` until it returns or the loop is stopped, whichever comes first; a stop
    /// cancels the operation's task and answers nil. For a body that waits on something with no
    /// end of its own (a LISTEN connection's notifications).
    public func untilStopped<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation() }
            group.addTask { [stopped] in
                _ = try? await stopped.wait()
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// `failureBackoff.lowerBound` doubled for each failure in a row after the first, capped.
    func backoff(afterFailures count: Int) -> Duration {
        var wait = failureBackoff.lowerBound
        for _ in 1..<min(max(1, count), 64) where wait < failureBackoff.upperBound { wait *= 2 }
        return min(wait, failureBackoff.upperBound)
    }
}

extension Duration {
    /// Whole milliseconds, for log metadata.
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
