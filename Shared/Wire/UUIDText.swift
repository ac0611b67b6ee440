import Foundation

/// UUID text without Foundation's detour through C string formatting and scanning, which costs
/// about 0.7 µs either way on Linux and is paid for every id in every query parameter and row.
extension UUID {
    /// Parses the 36-character `8-4-4-4-12` hexadecimal form, in either case (what
    /// `UUID(uuidString:)` accepts); nil for anything else.
    public init?(uuidText bytes: some Collection<UInt8>) {
        // One fixed-layout pass over bytes in place (arrays, strings, a query result's cell);
        // a collection without contiguous storage is copied first. Called from other modules,
        // this generic initializer is not specialized there, and a loop over `bytes` itself
        // would pay a witness call per byte.
        let parsed =
            bytes.withContiguousStorageIfAvailable { Self.parse(contiguous: $0) }
            ?? Array(bytes).withUnsafeBufferPointer { Self.parse(contiguous: $0) }
        guard let parsed else { return nil }
        self = parsed
    }

    /// The 36 bytes of `8-4-4-4-12`, hex digits in either case.
    private static func parse(contiguous text: UnsafeBufferPointer<UInt8>) -> UUID? {
        let dash = UInt8(ascii: "-")
        guard text.count == 36, text[8] == dash, text[13] == dash, text[18] == dash, text[23] == dash else {
            return nil
        }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &raw) { out -> Bool in
            var position = 0
            for index in 0..<16 {
                if position == 8 || position == 13 || position == 18 || position == 23 { position += 1 }
                guard let high = Hex.value(of: text[position]), let low = Hex.value(of: text[position + 1]) else {
                    return false
                }
                out[index] = high << 4 | low
                position += 2
            }
            return true
        }
        return parsed ? UUID(uuid: raw) : nil
    }

    /// Parses the text form (`init?(uuidText:)` on its UTF-8 bytes).
    public init?(uuidText text: String) {
        var text = text
        guard let uuid = text.withUTF8({ UUID(uuidText: $0) }) else { return nil }
        self = uuid
    }

    /// Lower-case `8-4-4-4-12` text, as PostgreSQL writes UUIDs.
    public var lowercasedText: String {
        String(unsafeUninitializedCapacity: 36) { out in
            writeLowercasedText(into: out)
            return 36
        }
    }

    /// Appends `lowercasedText`'s 36 bytes to `bytes` (no `String` in between).
    public func appendLowercasedText(to bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: 36))
        bytes.withUnsafeMutableBufferPointer {
            writeLowercasedText(into: UnsafeMutableBufferPointer(rebasing: $0[start...]))
        }
    }

    /// Writes the 36 bytes of the text form at the start of `out`: two digits per byte from a
    /// table, a dash before bytes 4, 6, 8 and 10 (ids are written several times per delivery).
    private func writeLowercasedText(into out: UnsafeMutableBufferPointer<UInt8>) {
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { hex in
            withUnsafeBytes(of: uuid) { raw in
                var position = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        out[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    let byte = raw[index]
                    out[position] = hex[Int(byte >> 4)]
                    out[position + 1] = hex[Int(byte & 0x0F)]
                    position += 2
                }
            }
        }
    }

}
