import Foundation

extension UUID {
    /// A version 7 UUID (RFC 9562): the Unix time `at` in milliseconds in its first 48 bits, random
    /// bits after. The ledger files a message by the time in its id (migration 0027): a statement
    /// that knows the id finds its week without a lookup.
    public static func timeOrdered(at date: Date = Date()) -> UUID {
        var generator = SystemRandomNumberGenerator()
        return timeOrdered(at: date, bits: (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// A version 7 UUID with the time `at` and, after it, bits 48 and on of `bits` (16 bytes; the
    /// version and variant bits are set over them).
    public static func timeOrdered(at date: Date, bits: [UInt8]) -> UUID {
        precondition(bits.count >= 16, "a UUID has 16 bytes")
        var b = Array(bits.prefix(16))
        let ms = UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded(.down)))
        for i in 0..<6 { b[i] = UInt8(truncatingIfNeeded: ms >> (8 * UInt64(5 - i))) }
        b[6] = (b[6] & 0x0F) | 0x70  // version 7
        b[8] = (b[8] & 0x3F) | 0x80  // RFC 9562 variant
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    /// The time in a version 7 UUID, to the millisecond (SQL's `bk_uuid7_time`); nil for any
    /// other version.
    public var timeOrderedDate: Date? {
        let b = uuid
        guard b.6 >> 4 == 7 else { return nil }
        let ms = [b.0, b.1, b.2, b.3, b.4, b.5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }
}
