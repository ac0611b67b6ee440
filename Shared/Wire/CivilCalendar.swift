/// Proleptic Gregorian calendar arithmetic on day numbers (days since 1970-01-01), after Howard
/// Hinnant's algorithms: exact for any year, no Foundation `Calendar`, so timestamps are parsed and
/// written the same way by the server (Postgres text, ISO 8601) and the SDK.
public enum CivilCalendar {
    /// The day number of a civil date.
    public static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The civil date (year, month, day) of a day number.
    public static func date(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// A UTC instant split into its civil fields.
    public struct DateTime: Sendable, Hashable {
        public var year: Int
        public var month: Int
        public var day: Int
        public var hour: Int
        public var minute: Int
        public var second: Int
        public var microsecond: Int
    }

    /// The UTC civil date and time of `microseconds` since 1970-01-01 (floors negative values, so
    /// instants before 1970 get a positive fraction of the earlier second).
    public static func dateTime(microseconds: Int64) -> DateTime {
        var seconds = microseconds / 1_000_000
        var fraction = microseconds % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (y, m, d) = date(fromDays: Int(days))
        return DateTime(
            year: y, month: m, day: d, hour: Int(secondOfDay / 3600), minute: Int(secondOfDay % 3600 / 60),
            second: Int(secondOfDay % 60), microsecond: Int(fraction))
    }

    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// `value` in decimal, left-padded with zeros to `width` digits.
    public static func padded(_ value: Int, _ width: Int) -> String {
        let s = String(value)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}
