import Foundation

/// A tenant's quiet hours: `start` to `end` on the subscriber's wall clock, e.g. 22:00-08:00
/// (crossing midnight) or 12:00-14:00. A workflow send whose moment falls inside waits for the
/// window's end unless its `policy` is `ignore`; plain `POST /v1/messages` is not affected.
/// `start == end` is an empty window (nothing is quiet).
public struct QuietHours: Sendable, Hashable, CustomStringConvertible {
    public var start: WallClockTime
    public var end: WallClockTime

    public init(start: WallClockTime, end: WallClockTime) {
        self.start = start
        self.end = end
    }

    /// Whether a local second of the day lies in `[start, end)`.
    public func contains(secondOfDay second: Int) -> Bool {
        let (s, e) = (start.secondOfDay, end.secondOfDay)
        if s == e { return false }
        return s < e ? (second >= s && second < e) : (second >= s || second < e)
    }

    /// The instant the window containing `date` ends (the next `end` on `zone`'s wall clock), or
    /// nil when `date` is outside quiet hours.
    public func shift(_ date: Date, in zone: TimeZone) -> Date? {
        guard contains(secondOfDay: WorkflowZones.local(date, in: zone).second) else { return nil }
        return WorkflowZones.next(end, after: date, in: zone)
    }

    public var description: String { "\(start)-\(end)" }
}
