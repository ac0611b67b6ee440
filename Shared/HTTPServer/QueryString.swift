/// Query strings and percent-encoding (RFC 3986; `+` means space only in queries).
enum QueryString {
    /// `a=1&b=x%20y&c` -> [("a","1"), ("b","x y"), ("c","")]. Empty pieces are skipped.
    static func parse(_ raw: String) -> [(name: String, value: String)] {
        guard !raw.isEmpty else { return [] }
        var items: [(name: String, value: String)] = []
        for piece in raw.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            if let eq = piece.firstIndex(of: UInt8(ascii: "=")) {
                items.append(
                    (
                        name: PercentDecoding.decode(piece[..<eq], plusIsSpace: true),
                        value: PercentDecoding.decode(piece[piece.index(after: eq)...], plusIsSpace: true)
                    ))
            } else {
                items.append((name: PercentDecoding.decode(piece, plusIsSpace: true), value: ""))
            }
        }
        return items
    }
}

enum PercentDecoding {
    /// Decodes `%HH` escapes; a malformed escape stays as written. Invalid UTF-8 is repaired.
    static func decode(_ bytes: some Collection<UInt8>, plusIsSpace: Bool = false) -> String {
        if !bytes.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i != bytes.endIndex {
            let c = bytes[i]
            if c == UInt8(ascii: "%") {
                let h1 = bytes.index(after: i)
                if h1 != bytes.endIndex {
                    let h2 = bytes.index(after: h1)
                    if h2 != bytes.endIndex, let a = hexValue(bytes[h1]), let b = hexValue(bytes[h2]) {
                        out.append(a << 4 | b)
                        i = bytes.index(after: h2)
                        continue
                    }
                }
                out.append(c)
            } else if plusIsSpace && c == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else {
                out.append(c)
            }
            i = bytes.index(after: i)
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
}
