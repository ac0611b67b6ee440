import BuzzKitWire
import Foundation

/// A one-dimensional PostgreSQL array literal (`{"a","b\"c",NULL,42}`) written straight into
/// bytes, for array parameters built per batch (the sender's ledger writes, the ingest's claims).
///
/// `[String].postgresText` (`PostgresArrayLiteral.format`) builds the literal one Unicode scalar
/// at a time; for a batch of a few hundred bytes of JSON per element that was about a fifth of a
/// sender's CPU. Here runs of plain bytes are copied whole and only `"` and `\` are escaped, as
/// the array input syntax requires. Text elements are always quoted; `NULL`, integers and UUIDs
/// are written bare.
public struct PostgresArrayText {
    private var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    /// No element yet.
    public var isEmpty: Bool { bytes.count == 1 }

    private mutating func separate() {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
    }

    public mutating func appendNull() {
        separate()
        bytes.append(contentsOf: [0x4E, 0x55, 0x4C, 0x4C])  // NULL
    }

    public mutating func append(_ value: Int) {
        separate()
        DecimalText.append(Int64(value), to: &bytes)
    }

    public mutating func append(_ value: Int?) {
        if let value { append(value) } else { appendNull() }
    }

    /// A uuid in its canonical lowercase text form (no quoting needed).
    public mutating func append(_ value: UUID) {
        separate()
        value.appendLowercasedText(to: &bytes)
    }

    /// A text element, quoted; nil is `NULL`.
    public mutating func append(_ value: String?) {
        guard var value else { return appendNull() }
        separate()
        bytes.append(UInt8(ascii: "\""))
        value.withUTF8 { appendEscaped($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A text element given as UTF-8 bytes (a JSON document, say), quoted.
    public mutating func append(utf8 value: [UInt8]) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        value.withUnsafeBufferPointer { appendEscaped($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The finished literal as a text-format parameter.
    public var value: PostgresValue {
        var out = bytes
        out.append(UInt8(ascii: "}"))
        return PostgresValue(bytes: out)
    }

    private mutating func appendEscaped(_ source: UnsafeBufferPointer<UInt8>) {
        var start = 0
        for (index, byte) in source.enumerated() where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[start..<index]))
            bytes.append(UInt8(ascii: "\\"))
            start = index
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[start..<source.count]))
    }
}
