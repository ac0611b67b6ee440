/// Builds `COPY ... FROM STDIN` text-format data: fields separated by tabs, rows by newlines,
/// NULL as `\N`, and backslash, newline, carriage return and tab escaped with a backslash.
struct PostgresCopyEncoder {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    var count: Int { bytes.count }

    mutating func appendRow(_ values: [any PostgresEncodable]) {
        for (i, value) in values.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: "\t")) }
            if var text = value.postgresText {
                text.withUTF8 { append(escaping: $0) }
            } else {
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "N"))
            }
        }
        bytes.append(UInt8(ascii: "\n"))
    }

    /// Hands out the bytes so far and starts over.
    mutating func take() -> [UInt8] {
        let capacity = bytes.capacity
        defer { bytes = []; bytes.reserveCapacity(capacity) }
        return bytes
    }

    private mutating func append(escaping field: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        for i in 0..<field.count {
            let replacement: UInt8
            switch field[i] {
            case UInt8(ascii: "\\"): replacement = UInt8(ascii: "\\")
            case UInt8(ascii: "\n"): replacement = UInt8(ascii: "n")
            case UInt8(ascii: "\r"): replacement = UInt8(ascii: "r")
            case UInt8(ascii: "\t"): replacement = UInt8(ascii: "t")
            default: continue
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: field[runStart..<i]))
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(replacement)
            runStart = i + 1
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: field[runStart..<field.count]))
    }
}
