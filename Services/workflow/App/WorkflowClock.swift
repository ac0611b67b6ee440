import Foundation
import Synchronization

/// The service's time: every run's `now` (when a timer is due, when a step begins) comes from
/// here, so tests can check 07:00 in Berlin across a DST change without waiting for it.
public struct WorkflowClock: Sendable {
    public let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date) {
        self.now = now
    }

    public static let system = WorkflowClock { Date() }

    /// The system clock plus the number of seconds in the file at `path` (0 while it is missing or
    /// unreadable), re-read at most every 20 ms: a test moves a running service's time forward
    /// (or back) by rewriting the file.
    public static func offsetFile(_ path: String) -> WorkflowClock {
        let cache = Mutex<(readAt: Date, offset: Double)>((.distantPast, 0))
        return WorkflowClock {
            let real = Date()
            let offset = cache.withLock { cached -> Double in
                if real.timeIntervalSince(cached.readAt) < 0.02 { return cached.offset }
                let text = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(
                    in: .whitespacesAndNewlines)
                let offset = text.flatMap(Double.init) ?? 0
                cached = (real, offset)
                return offset
            }
            return real.addingTimeInterval(offset)
        }
    }
}
