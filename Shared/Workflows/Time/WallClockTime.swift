/// A local time of day `"HH:MM"` (24 h, `00:00` to `23:59`): `waitUntil.time` and the tenant's
/// quiet hours. It names a wall-clock reading, not an instant: `WorkflowZones.next(_:after:in:)`
/// finds the instant in a zone.
public struct WallClockTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let hour: Int
    public let minute: Int

    public init?(hour: Int, minute: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        self.hour = hour
        self.minute = minute
    }

    /// Exactly two digits, a colon, two digits.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":") else { return nil }
        func digit(_ b: UInt8) -> Int? { b >= 0x30 && b <= 0x39 ? Int(b - 0x30) : nil }
        guard let h1 = digit(bytes[0]), let h2 = digit(bytes[1]), let m1 = digit(bytes[3]), let m2 = digit(bytes[4])
        else {
            return nil
        }
        self.init(hour: h1 * 10 + h2, minute: m1 * 10 + m2)
    }

    /// Seconds after local midnight.
    public var secondOfDay: Int { hour * 3600 + minute * 60 }

    public var description: String {
        (hour < 10 ? "0" : "") + String(hour) + ":" + (minute < 10 ? "0" : "") + String(minute)
    }

    public static func < (a: WallClockTime, b: WallClockTime) -> Bool { a.secondOfDay < b.secondOfDay }

    static let rule = "must be a local time HH:MM (00:00 to 23:59)"
}
