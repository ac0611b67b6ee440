/// A fast, allocation-light JSON writer.
///
/// `JSONEncoder` costs about 12 µs for a small payload on this machine and `JSONSerialization` far
/// more; hot paths (responses, APNs payloads, log lines) write bytes directly with this instead.
/// Keys of `JSONValue.object` are written sorted, so the same value always yields the same bytes.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    /// Empties the writer and keeps its storage, for writing many small documents in a row.
    public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Drops the last byte written (a closing bracket to write past, say).
    public mutating func removeLast() { bytes.removeLast() }

    public mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    public mutating func rawBytes(_ b: some Sequence<UInt8>) { bytes.append(contentsOf: b) }

    /// Copies runs of plain bytes whole and escapes only what must be (quote, backslash, control
    /// characters): appending byte by byte checked the capacity for every byte.
    public mutating func string(_ s: String) {
        var text = s
        text.withUTF8 { string(utf8: $0) }
    }

    /// A string given as its UTF-8 bytes (text read from Postgres, say), escaped the same way.
    public mutating func string(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var runStart = 0
        for index in utf8.indices {
            let unit = utf8[index]
            guard unit < 0x20 || unit == UInt8(ascii: "\"") || unit == UInt8(ascii: "\\") else { continue }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            escape(unit)
            runStart = index + 1
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func escape(_ unit: UInt8) {
        switch unit {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"):
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(unit)
        case 0x0A: raw("\\n")
        case 0x0D: raw("\\r")
        case 0x09: raw("\\t")
        default:
            raw("\\u00")
            bytes.append(Hex.digit(unit >> 4))
            bytes.append(Hex.digit(unit))
        }
    }

    public mutating func int(_ i: some BinaryInteger) {
        if let value = Int64(exactly: i) {
            DecimalText.append(value, to: &bytes)
        } else {
            bytes.append(contentsOf: String(i).utf8)
        }
    }

    public mutating func double(_ d: Double) {
        if d.isFinite {
            if d.rounded() == d && abs(d) < 1e15 {
                bytes.append(contentsOf: String(Int64(d)).utf8)
                raw(".0")
            } else {
                bytes.append(contentsOf: "\(d)".utf8)
            }
        } else {
            raw("null")  // JSON has no NaN or infinity
        }
    }

    public mutating func bool(_ b: Bool) { if b { raw("true") } else { raw("false") } }

    /// An instant as a JSON string in `EventTimestamp`'s form (`"2024-05-01T12:00:00.250Z"`).
    public mutating func timestamp(microseconds: Int64) {
        bytes.append(UInt8(ascii: "\""))
        EventTimestamp.append(microseconds: microseconds, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// `"key":` after a `,` unless `first` (which it clears): for documents written member by
    /// member without a `JSONValue` tree.
    public mutating func key(_ key: StaticString, first: inout Bool) {
        if first { first = false } else { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        raw(key)
        raw("\":")
    }

    public mutating func value(_ v: JSONValue) {
        switch v {
        case .null: raw("null")
        case .bool(let b): bool(b)
        case .int(let i): int(i)
        case .double(let d): double(d)
        case .string(let s): string(s)
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in a.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                value(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o):
            bytes.append(UInt8(ascii: "{"))
            // Sorted pairs: no second hash lookup per member.
            for (index, member) in o.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                string(member.key)
                bytes.append(UInt8(ascii: ":"))
                value(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Writes `{"k1":v1,"k2":v2}` in the given order.
    public mutating func object(_ members: KeyValuePairs<String, JSONValue>) {
        bytes.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            string(member.key)
            bytes.append(UInt8(ascii: ":"))
            value(member.value)
        }
        bytes.append(UInt8(ascii: "}"))
    }
}

extension JSONValue {
    /// Compact JSON text with sorted object keys.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        writer.value(self)
        return writer.bytes
    }

    public var jsonString: String { String(decoding: jsonBytes, as: UTF8.self) }
}
