import Foundation

/// ISO 8601 timestamps as events carry them, without `ISO8601DateFormatter` (slow, and not
/// `Sendable`): `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)`.
///
/// An offset is required (a bare local time is ambiguous); fractions keep microsecond precision,
/// the database's own. Written back in UTC with milliseconds (`2024-05-01T12:00:00.250Z`), or
/// microseconds when the value has sub-millisecond digits.
public enum EventTimestamp {
    /// Microseconds since 1970 for `text`, nil when it is not an ISO 8601 date-time with offset.
    public static func parseMicroseconds(_ text: String) -> Int64? {
        var utf8 = Array(text.utf8)
        guard utf8.count >= 20 else { return nil }
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= utf8.count else { return nil }
            var value = 0
            for k in 0..<n {
                let c = utf8[i + k]
                guard c >= 48 && c <= 57 else { return nil }
                value = value * 10 + Int(c - 48)
            }
            i += n
            return value
        }
        func take(_ c: UInt8) -> Bool {
            guard i < utf8.count, utf8[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), take(45), let month = digits(2), take(45), let day = digits(2),
            take(84) || take(116) || take(32),
            let hour = digits(2), take(58), let minute = digits(2), take(58), let second = digits(2),
            (1...12).contains(month), day >= 1, day <= CivilCalendar.daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var micros = 0
        if take(46) {
            var scale = 100_000
            var count = 0
            while i < utf8.count, utf8[i] >= 48, utf8[i] <= 57 {
                if scale > 0 {
                    micros += Int(utf8[i] - 48) * scale
                    scale /= 10
                }
                i += 1
                count += 1
            }
            guard count > 0 else { return nil }
        }
        var offsetSeconds = 0
        if take(90) || take(122) {
        } else if i < utf8.count, utf8[i] == 43 || utf8[i] == 45 {
            let sign = utf8[i] == 45 ? -1 : 1
            i += 1
            guard let oh = digits(2), oh < 24 else { return nil }
            _ = take(58)
            guard let om = digits(2), om < 60 else { return nil }
            offsetSeconds = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == utf8.count else { return nil }
        utf8.removeAll()
        let days = CivilCalendar.days(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        return seconds * 1_000_000 + Int64(micros)
    }

    /// The `Date` for `text` (see `parseMicroseconds`).
    public static func parse(_ text: String) -> Date? {
        parseMicroseconds(text).map { Date(timeIntervalSince1970: Double($0) / 1_000_000) }
    }

    /// `2024-05-01T12:00:00.250Z` (UTC).
    public static func format(microseconds: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(27)
        append(microseconds: microseconds, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `format(microseconds:)`'s text appended as bytes (no `String`s in between: run states
    /// and events write several per document on the workflow service's hot path).
    public static func append(microseconds: Int64, to bytes: inout [UInt8]) {
        let t = CivilCalendar.dateTime(microseconds: microseconds)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var value = value
            if value < 0 || value >= divisor * 10 {  // a year outside 0...9999: as it is
                bytes.append(contentsOf: String(value).utf8)
                return
            }
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor))
                value %= divisor
                divisor /= 10
            }
        }
        digits(t.year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(t.month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(t.day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(t.hour, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(t.minute, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(t.second, 2)
        bytes.append(UInt8(ascii: "."))
        if t.microsecond % 1000 == 0 { digits(t.microsecond / 1000, 3) } else { digits(t.microsecond, 6) }
        bytes.append(UInt8(ascii: "Z"))
    }

    public static func format(_ date: Date) -> String {
        format(microseconds: microseconds(date))
    }

    public static func microseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

}
