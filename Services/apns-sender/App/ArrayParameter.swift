import BuzzKitPostgres
import Foundation

/// A one-dimensional PostgreSQL array literal written straight into bytes, for the sender's
/// per-chunk array parameters (ids, statuses, payloads, headers).
///
/// `[String].postgresText` builds the literal one Unicode scalar at a time; for a chunk's ledger
/// write (a few hundred bytes of JSON per attempt) that was about a fifth of a sender's CPU.
/// Here ASCII bytes are copied in bulk and only `"` and `\` are escaped, as the array input
/// syntax requires. Elements are always quoted except `NULL`, numbers and uuids.
struct ArrayParameter {
    private var bytes: [UInt8]

    init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    private mutating func separate() {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
    }

    mutating func appendNull() {
        separate()
        bytes.append(contentsOf: [0x4E, 0x55, 0x4C, 0x4C])  // NULL
    }

    mutating func append(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func append(_ value: Int?) {
        if let value { append(value) } else { appendNull() }
    }

    /// A uuid in its canonical lowercase text form (no quoting needed).
    mutating func append(_ value: UUID) {
        separate()
        Self.appendUUID(value, to: &bytes)
    }

    mutating func append(_ value: String?) {
        guard var value else { return appendNull() }
        separate()
        bytes.append(UInt8(ascii: "\""))
        value.withUTF8 { Self.appendEscaped($0, to: &bytes) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A text element given as UTF-8 bytes (a JSON document, say).
    mutating func append(utf8 value: [UInt8]) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        value.withUnsafeBufferPointer { Self.appendEscaped($0, to: &bytes) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The finished literal as a text-format parameter.
    var value: PostgresValue {
        var out = bytes
        out.append(UInt8(ascii: "}"))
        return PostgresValue(bytes: out)
    }

    private static func appendEscaped(_ source: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        var start = 0
        for (index, byte) in source.enumerated() where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[start..<index]))
            bytes.append(UInt8(ascii: "\\"))
            start = index
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[start..<source.count]))
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    static func appendUUID(_ value: UUID, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.uuid) { raw in
            for (index, byte) in raw.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            }
        }
    }

    /// `value` as canonical lowercase text (what PostgreSQL prints), without Foundation's formatter.
    static func lowercaseText(_ value: UUID) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(36)
        appendUUID(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension [UUID] {
    /// The ids as a `uuid[]` parameter.
    var arrayParameter: PostgresValue {
        var array = ArrayParameter(capacity: 2 + count * 37)
        for id in self { array.append(id) }
        return array.value
    }
}
