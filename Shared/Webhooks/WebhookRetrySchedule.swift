import BuzzKitCore
import Foundation

/// When a message is sent again after a failed attempt: any status but 2xx, a timeout or a
/// refused connection. `delays[n]` is the wait before attempt n+1 (the first is normally 0:
/// immediately); after the last attempt fails the message is `failed` (a replay sends it again).
/// An answer's `Retry-After` (seconds or an HTTP date) is honoured: the next attempt is never
/// earlier than it asks, and never later than `retryAfterLimit`.
public struct WebhookRetrySchedule: Sendable, Hashable, CustomStringConvertible {
    /// Immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: eight attempts over about 27.6 hours.
    public static let standard = WebhookRetrySchedule(
        delays: [
            .zero, .seconds(5), .seconds(300), .seconds(1800), .seconds(7200), .seconds(18000), .seconds(36000),
            .seconds(36000)
        ])
    /// The longest wait a `Retry-After` can ask for.
    public static let retryAfterLimit: Duration = .seconds(86400)

    public let delays: [Duration]

    public init(delays: [Duration]) {
        precondition(!delays.isEmpty, "a schedule has at least one attempt")
        self.delays = delays
    }

    /// `0s,5s,5m,30m,2h,5h,10h,10h` (durations as `BUZZKIT_*` settings write them).
    public init?(text: String) {
        var delays: [Duration] = []
        for part in text.split(separator: ",") {
            guard let delay = ConfigReader.parseDuration(part.trimmingCharacters(in: .whitespaces)) else { return nil }
            delays.append(delay)
        }
        guard !delays.isEmpty else { return nil }
        self.delays = delays
    }

    public var attempts: Int { delays.count }

    public var description: String { delays.map { "\($0.components.seconds)s" }.joined(separator: ",") }

    /// After attempt `attempt` (1-based) failed: how long until the next one, or nil when it was the last.
    public func delay(after attempt: Int, retryAfter: Duration?) -> Duration? {
        guard attempt >= 1, attempt < delays.count else { return nil }
        let scheduled = delays[attempt]
        guard let retryAfter else { return scheduled }
        return max(scheduled, min(retryAfter, Self.retryAfterLimit))
    }

    /// A `Retry-After` value: delta-seconds or an HTTP date (then relative to `now`); nil when absent or unreadable.
    public static func retryAfter(_ value: String?, now: Date) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int64(value) { return seconds >= 0 ? .seconds(seconds) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .milliseconds(Int64(max(0, date.timeIntervalSince(now)) * 1000))
    }
}
