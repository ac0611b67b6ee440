import BuzzKitWire
import Foundation

/// Time zones and wall-clock arithmetic for waits and quiet hours, on Foundation's `TimeZone`
/// (tzdata; the tests pin DST days of Europe/Berlin and America/New_York).
public enum WorkflowZones {
    /// A zone named by its IANA identifier (`Europe/Berlin`), or `UTC`/`GMT`: the names the system's
    /// zone database has files for. Offsets Foundation would also take (`GMT+2`) are refused.
    public static func zone(named name: String) -> TimeZone? {
        guard isKnown(name) else { return nil }
        return TimeZone(identifier: name)
    }

    /// The names the gateway accepts for a subscriber's zone (`TimeZoneNames`), so a zone saved on
    /// a subscriber is never refused in a definition.
    public static func isKnown(_ name: String) -> Bool {
        if name == "UTC" || name == "GMT" || name == "Etc/UTC" { return true }
        return TimeZoneNames.isKnown(name)
    }

    /// The zone a subscriber's wall-clock times are read in: their own `timezone` when Foundation
    /// knows it (the subscriber routes checked it when it was saved), else the tenant's default,
    /// else UTC. `source` says which one was used.
    public static func subscriberZone(_ subscriberTimezone: String?, tenantDefault: String?) -> (
        zone: TimeZone, name: String, source: String
    ) {
        if let name = subscriberTimezone, !name.isEmpty, let zone = TimeZone(identifier: name) {
            return (zone, name, "subscriber")
        }
        if let name = tenantDefault, !name.isEmpty, let zone = TimeZone(identifier: name) {
            return (zone, name, "tenant default")
        }
        return (utc, "UTC", "UTC")
    }

    static let utc = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0)!

    /// The instant at which the wall clock of `zone` reads `time` on the civil day `day` (days since
    /// 1970-01-01). A reading that does not exist that day (spring forward) moves forward by the
    /// gap (02:30 on a day that skips 02:00-03:00 is 03:30); one that occurs twice (fall back)
    /// takes the first.
    public static func instant(day: Int, time: WallClockTime, in zone: TimeZone) -> Date {
        let local = Int64(day) * 86_400 + Int64(time.secondOfDay)  // the reading as if it were UTC
        // The offsets on either side of the day: at most one transition lies between them.
        let before = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(local - 86_400))))
        let after = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(local + 86_400))))
        func maps(_ offset: Int64) -> Int64? {
            let candidate = local - offset
            return Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(candidate)))) == offset
                ? candidate : nil
        }
        let candidates = [maps(before), maps(after)].compactMap { $0 }
        if let first = candidates.min() { return Date(timeIntervalSince1970: Double(first)) }
        // A gap: read with the offset before the transition, which lands after it by the gap.
        return Date(timeIntervalSince1970: Double(local - before))
    }

    /// The civil day (days since 1970-01-01) and second of the day that `zone`'s wall clock shows at `date`.
    public static func local(_ date: Date, in zone: TimeZone) -> (day: Int, second: Int) {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down)) + Int64(zone.secondsFromGMT(for: date))
        var day = seconds / 86_400
        var second = seconds % 86_400
        if second < 0 {
            second += 86_400
            day -= 1
        }
        return (Int(day), Int(second))
    }

    /// The first instant strictly after `date` at which `zone`'s wall clock reads `time` (with
    /// the gap and overlap rules of `instant(day:time:in:)`).
    public static func next(_ time: WallClockTime, after date: Date, in zone: TimeZone) -> Date {
        let today = local(date, in: zone).day
        for day in (today - 1)...(today + 2) {
            let candidate = instant(day: day, time: time, in: zone)
            if candidate > date { return candidate }
        }
        return instant(day: today + 3, time: time, in: zone)
    }

    /// The wall-clock date components of `date` in `zone` (a local plan's `fireAt`).
    public static func components(_ date: Date, in zone: TimeZone) -> (
        year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int
    ) {
        let (day, second) = local(date, in: zone)
        let civil = CivilCalendar.date(fromDays: day)
        return (civil.year, civil.month, civil.day, second / 3600, second % 3600 / 60, second % 60)
    }
}
