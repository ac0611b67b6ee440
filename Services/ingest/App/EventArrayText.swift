import BuzzKitPostgres

/// One PostgreSQL array literal (`{"a","b\"c",NULL}`, text format) written as bytes: only `"` and
/// `\` need escaping inside a quoted element. A statement parameter through `value`.
struct EventArrayText {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]

    var isEmpty: Bool { bytes.count == 1 }

    private mutating func separate() { if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) } }

    /// An element that needs no quoting (numbers, uuids, stream ids).
    mutating func appendBare(_ text: String) {
        separate()
        bytes.append(contentsOf: text.utf8)
    }

    mutating func appendNull() {
        separate()
        bytes.append(contentsOf: "NULL".utf8)
    }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append(buffer: $0) }
    }

    mutating func append(bytes element: [UInt8]) {
        element.withUnsafeBufferPointer { append(buffer: $0) }
    }

    private mutating func append(buffer: UnsafeBufferPointer<UInt8>) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        for byte in buffer {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
            bytes.append(byte)
        }
        bytes.append(UInt8(ascii: "\""))
    }

    var value: PostgresValue { PostgresValue(bytes: bytes + [UInt8(ascii: "}")], format: .text) }
}
