import BuzzKitWire
import BuzzKitWorkflows
import Foundation
import Testing

/// `2024-03-31T00:30:00Z` → Date.
func utc(_ text: String) -> Date {
    guard let date = EventTimestamp.parse(text) else { fatalError("bad test date \(text)") }
    return date
}

func zone(_ name: String) -> TimeZone {
    guard let zone = WorkflowZones.zone(named: name) else { fatalError("unknown zone \(name)") }
    return zone
}

struct NextCase: Sendable, CustomTestStringConvertible {
    var zone: String
    var time: String
    var after: String
    var expected: String
    var note: String
    var testDescription: String { "\(time) in \(zone) after \(after): \(note)" }
}

@Suite("Workflow time: durations, wall clock, DST, quiet hours")
struct WorkflowTimeTests {
    @Test(arguments: [
        ("30s", Int64(30)), ("90m", 5400), ("36h", 129_600), ("7d", 604_800), ("365d", 31_536_000),
        ("8760h", 31_536_000), ("1s", 1)
    ])
    func durationsParse(_ text: String, _ seconds: Int64) {
        #expect(WorkflowDuration(text)?.seconds == seconds)
    }

    @Test(arguments: ["", "30", "s", "0s", "030s", "1.5h", "-1d", "366d", "8761h", "1w", "7 d", "7D", "99999999999d"])
    func badDurations(_ text: String) {
        #expect(WorkflowDuration(text) == nil)
    }

    @Test(arguments: [("00:00", 0, 0), ("07:00", 7, 0), ("23:59", 23, 59), ("12:05", 12, 5)])
    func wallClock(_ text: String, _ h: Int, _ m: Int) {
        let t = WallClockTime(text)
        #expect(t?.hour == h && t?.minute == m && t?.description == text)
    }

    @Test(arguments: ["24:00", "7:00", "07:60", "07-00", "0700", "07:00:00", "ab:cd", " 07:00", ""])
    func badWallClock(_ text: String) {
        #expect(WallClockTime(text) == nil)
    }

    @Test func zonesAreIANANames() {
        #expect(WorkflowZones.zone(named: "Europe/Berlin") != nil)
        #expect(WorkflowZones.zone(named: "America/New_York") != nil)
        #expect(WorkflowZones.zone(named: "UTC") != nil)
        // Not in Foundation's knownTimeZoneIdentifiers (it has Asia/Calcutta), but a zone file, and
        // what the gateway accepts for a subscriber's timezone and the tenant's default.
        #expect(WorkflowZones.zone(named: "Asia/Kolkata") != nil)
        #expect(WorkflowZones.zone(named: "Mars/Olympus") == nil)
        #expect(WorkflowZones.zone(named: "GMT+2") == nil)
        #expect(WorkflowZones.zone(named: "europe/berlin") == nil)
    }

    static let nextCases: [NextCase] = [
        // Europe/Berlin: CET (+1) until 2024-03-31 01:00Z, then CEST (+2) until 2024-10-27 01:00Z.
        NextCase(
            zone: "Europe/Berlin", time: "07:00", after: "2024-03-30T12:00:00Z", expected: "2024-03-31T05:00:00.000Z",
            note: "the morning after spring forward is CEST"),
        NextCase(
            zone: "Europe/Berlin", time: "07:00", after: "2024-03-30T05:30:00Z", expected: "2024-03-30T06:00:00.000Z",
            note: "the same morning, still CET"),
        NextCase(
            zone: "Europe/Berlin", time: "02:30", after: "2024-03-30T22:00:00Z", expected: "2024-03-31T01:30:00.000Z",
            note: "02:30 does not exist: moved forward by the gap to 03:30 CEST"),
        NextCase(
            zone: "Europe/Berlin", time: "02:00", after: "2024-03-30T22:00:00Z", expected: "2024-03-31T01:00:00.000Z",
            note: "02:00 does not exist: 03:00 CEST, the transition itself"),
        NextCase(
            zone: "Europe/Berlin", time: "07:00", after: "2024-10-26T12:00:00Z", expected: "2024-10-27T06:00:00.000Z",
            note: "the morning after fall back is CET"),
        NextCase(
            zone: "Europe/Berlin", time: "02:30", after: "2024-10-26T22:00:00Z", expected: "2024-10-27T00:30:00.000Z",
            note: "02:30 occurs twice: the first, CEST"),
        NextCase(
            zone: "Europe/Berlin", time: "02:30", after: "2024-10-27T00:30:00Z", expected: "2024-10-28T01:30:00.000Z",
            note: "strictly after the first 02:30: not the repeated one, the next day's"),
        NextCase(
            zone: "Europe/Berlin", time: "07:00", after: "2024-06-01T05:00:00Z", expected: "2024-06-02T05:00:00.000Z",
            note: "exactly at 07:00: the next day's"),
        // America/New_York: EST (-5) until 2024-03-10 07:00Z, EDT (-4) until 2024-11-03 06:00Z.
        NextCase(
            zone: "America/New_York", time: "07:00", after: "2024-03-09T20:00:00Z",
            expected: "2024-03-10T11:00:00.000Z",
            note: "the morning after spring forward is EDT"),
        NextCase(
            zone: "America/New_York", time: "02:15", after: "2024-03-10T05:00:00Z",
            expected: "2024-03-10T07:15:00.000Z",
            note: "02:15 does not exist: 03:15 EDT"),
        NextCase(
            zone: "America/New_York", time: "01:30", after: "2024-11-03T04:00:00Z",
            expected: "2024-11-03T05:30:00.000Z",
            note: "01:30 occurs twice: the first, EDT"),
        NextCase(
            zone: "America/New_York", time: "07:00", after: "2024-11-02T20:00:00Z",
            expected: "2024-11-03T12:00:00.000Z",
            note: "the morning after fall back is EST"),
        NextCase(
            zone: "America/New_York", time: "23:00", after: "2024-12-31T23:00:00Z",
            expected: "2025-01-01T04:00:00.000Z",
            note: "across the new year"),
        NextCase(
            zone: "UTC", time: "00:00", after: "2024-02-28T23:59:59Z", expected: "2024-02-29T00:00:00.000Z",
            note: "leap day")
    ]

    @Test(arguments: nextCases)
    func nextOccurrence(_ c: NextCase) {
        let next = WorkflowZones.next(WallClockTime(c.time)!, after: utc(c.after), in: zone(c.zone))
        #expect(EventTimestamp.format(next) == c.expected)
    }

    @Test(
        arguments: [
            // (start, end, zone, instant, expected end or nil)
            ("22:00", "08:00", "Europe/Berlin", "2024-06-01T21:30:00Z", "2024-06-02T06:00:00.000Z"),  // 23:30 CEST
            ("22:00", "08:00", "Europe/Berlin", "2024-06-01T23:30:00Z", "2024-06-02T06:00:00.000Z"),  // 01:30 CEST
            ("22:00", "08:00", "Europe/Berlin", "2024-06-01T06:00:00Z", nil),  // 08:00: window over
            ("22:00", "08:00", "Europe/Berlin", "2024-06-01T19:59:59Z", nil),  // 21:59:59
            ("22:00", "08:00", "Europe/Berlin", "2024-06-01T20:00:00Z", "2024-06-02T06:00:00.000Z"),  // 22:00 sharp
            // across spring forward
            ("22:00", "08:00", "Europe/Berlin", "2024-03-30T22:30:00Z", "2024-03-31T06:00:00.000Z"),
            // across fall back
            ("22:00", "08:00", "America/New_York", "2024-11-03T03:00:00Z", "2024-11-03T13:00:00.000Z"),
            ("12:00", "14:00", "UTC", "2024-06-01T12:59:00Z", "2024-06-01T14:00:00.000Z"),
            ("12:00", "14:00", "UTC", "2024-06-01T11:59:00Z", nil),
            ("09:00", "09:00", "UTC", "2024-06-01T09:00:00Z", nil)  // empty window
        ] as [(String, String, String, String, String?)])
    func quietHours(_ start: String, _ end: String, _ zoneName: String, _ instant: String, _ expected: String?) {
        let quiet = QuietHours(start: WallClockTime(start)!, end: WallClockTime(end)!)
        #expect(quiet.shift(utc(instant), in: zone(zoneName)).map(EventTimestamp.format) == expected)
    }

    @Test func subscriberZoneFallsBack() {
        #expect(WorkflowZones.subscriberZone("Asia/Tokyo", tenantDefault: "Europe/Berlin").name == "Asia/Tokyo")
        #expect(WorkflowZones.subscriberZone(nil, tenantDefault: "Europe/Berlin").name == "Europe/Berlin")
        #expect(WorkflowZones.subscriberZone("Nowhere/Land", tenantDefault: nil).name == "UTC")
    }
}
