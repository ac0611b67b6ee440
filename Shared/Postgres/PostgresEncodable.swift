import BuzzKitWire
import Foundation

/// A Swift value that can be a statement parameter or a `COPY` field.
///
/// Conformers give their PostgreSQL text form (`postgresText`, `nil` for NULL); `postgresValue` is
/// derived from it unless a type knows a better wire form (`Data` goes binary as `bytea`).
/// Arrays of encodable values become array literals (`{"a","b",NULL}`), so `= ANY($1)` works.
public protocol PostgresEncodable: Sendable {
    /// The value in PostgreSQL's text input format; `nil` means SQL NULL.
    var postgresText: String? { get }
    /// The value as a bound parameter. Default: `postgresText` in text format, type inferred.
    var postgresValue: PostgresValue { get }
}

extension PostgresEncodable {
    public var postgresValue: PostgresValue { PostgresValue(text: postgresText) }
}

extension String: PostgresEncodable {
    public var postgresText: String? { self }
}

extension Substring: PostgresEncodable {
    public var postgresText: String? { String(self) }
}

extension Int: PostgresEncodable { public var postgresText: String? { String(self) } }
extension Int64: PostgresEncodable { public var postgresText: String? { String(self) } }
extension Int32: PostgresEncodable { public var postgresText: String? { String(self) } }
extension Int16: PostgresEncodable { public var postgresText: String? { String(self) } }

extension Double: PostgresEncodable {
    public var postgresText: String? {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return "\(self)"
    }
}

extension Bool: PostgresEncodable {
    public var postgresText: String? { self ? "true" : "false" }
}

extension UUID: PostgresEncodable {
    public var postgresText: String? { lowercasedText }
}

extension Date: PostgresEncodable {
    /// `timestamptz` text in UTC with microseconds: `2024-05-01 12:00:00.250000+00`.
    public var postgresText: String? { PostgresTimestamp.format(self) }
}

extension JSONValue: PostgresEncodable {
    /// Compact JSON text; works for `json` and `jsonb` columns. `JSONValue.null` is the JSON
    /// literal `null`, not SQL NULL: use `JSONValue?.none` for that.
    public var postgresText: String? { jsonString }
}

extension Data: PostgresEncodable {
    public var postgresText: String? { PostgresHex.byteaText(self) }
    public var postgresValue: PostgresValue {
        PostgresValue(bytes: [UInt8](self), format: .binary, typeOID: PostgresTypeOID.bytea)
    }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public var postgresText: String? { self?.postgresText }
    public var postgresValue: PostgresValue { self?.postgresValue ?? .null }
}

extension Array: PostgresEncodable where Element: PostgresEncodable {
    /// A one-dimensional array literal; every element quoted, NULL elements bare.
    ///
    /// A closure, not `\.postgresText`: a key path over this generic `Element` is instantiated
    /// from its mangled name at every call (`swift_getKeyPath`, type metadata lookups), which
    /// cost more than the formatting itself (a profile of the liveactivity service's ledger write).
    public var postgresText: String? { PostgresArrayLiteral.format(self.map { $0.postgresText }) }
    /// The literal's bytes directly (no `String` in between).
    public var postgresValue: PostgresValue {
        var literal = PostgresArrayText()
        for element in self { literal.append(element.postgresText) }
        return literal.value
    }
}
