/// Lower-case hexadecimal text, both ways: the one place that knows the digits, for every writer
/// and reader of hex (digests, ids, device tokens, JSON `\u00XX` escapes, `bytea` literals, UUIDs).
public enum Hex {
    /// The digit for the low four bits of `value` (`0`-`9`, `a`-`f`).
    @inlinable
    public static func digit(_ value: some BinaryInteger) -> UInt8 {
        let nibble = UInt8(truncatingIfNeeded: value) & 0xF
        return nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }

    /// The value of one hex digit, either case; nil for anything else.
    @inlinable
    public static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Appends two digits per byte.
    @inlinable
    public static func append(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        for byte in bytes {
            out.append(digit(byte >> 4))
            out.append(digit(byte))
        }
    }

    /// Two digits per byte, as text.
    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
