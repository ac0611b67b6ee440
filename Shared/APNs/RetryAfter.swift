import BuzzKitWire
import Foundation

/// The `retry-after` field of a 429 or 503 (RFC 9110 §10.2.3): whole seconds, or an HTTP date
/// (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`). APNs documents none, but a server that says
/// when to come back is listened to (`APNsOutcome.classify` waits at least that long, up to the
/// policy's `maxDelay`).
public enum RetryAfter {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The wait the field asks for (a date in the past: zero); nil when it is neither form.
    public static func parse(_ text: String, now: Date) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard let seconds = Int64(trimmed) else { return nil }
            return .seconds(seconds)
        }
        guard let date = httpDate(trimmed) else { return nil }
        let seconds = date.timeIntervalSince(now)
        return seconds <= 0 ? .zero : .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    /// IMF-fixdate only (the obsolete RFC 850 and asctime forms are not sent by anyone now).
    static func httpDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
            let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])), let year = Int(parts[3])
        else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3, let hour = Int(time[0]), let minute = Int(time[1]), let second = Int(time[2]),
            (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let days = CivilCalendar.days(year: year, month: month + 1, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }
}
