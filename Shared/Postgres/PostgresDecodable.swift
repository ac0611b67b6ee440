import BuzzKitWire
import Foundation

/// One column value of one row, in PostgreSQL's text format, handed to `PostgresDecodable`.
///
/// `bytes` points into the query result and is valid only during the `decode` call; `nil` is NULL.
public struct PostgresCell {
    public let bytes: UnsafeRawBufferPointer?
    /// The column's type OID (see `PostgresTypeOID`), 0 when unknown (array elements).
    public let typeOID: UInt32

    public init(bytes: UnsafeRawBufferPointer?, typeOID: UInt32) {
        self.bytes = bytes
        self.typeOID = typeOID
    }

    /// The bytes of a non-NULL value, or `unexpectedNull` for `T`.
    public func require<T>(_ type: T.Type) throws(PostgresDecodingError) -> UnsafeRawBufferPointer {
        guard let bytes else {
            throw PostgresDecodingError(code: .unexpectedNull, targetType: String(describing: type))
        }
        return bytes
    }

    /// The value as a string, `nil` for NULL.
    public var string: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
}

/// A Swift type that can be read from a result column (text format).
///
/// Built in: `String`, `Int`, `Int64`, `Int32`, `Int16`, `Double`, `Bool`, `Date` (`timestamptz`,
/// `timestamp` as UTC, `date`), `UUID`, `JSONValue` (`json`, `jsonb`), `Data` (`bytea`), arrays of
/// any of these (one dimension), and `Optional` of any of these for nullable columns; a NULL read
/// as a non-optional type throws `unexpectedNull`.
public protocol PostgresDecodable: Sendable {
    static func decode(from cell: PostgresCell) throws -> Self
}

extension String: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> String {
        String(decoding: try cell.require(String.self), as: UTF8.self)
    }
}

enum PostgresInteger {
    /// Parses an optionally signed decimal integer (a `numeric` with `.000` fraction too).
    static func parse<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, as: T.Type) -> T? {
        var index = 0
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            index = 1
        }
        guard index < bytes.count else { return nil }
        var value: T = 0
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: ".") {
                // numeric with an all-zero fraction still is an integer
                guard bytes[(index + 1)...].allSatisfy({ $0 == UInt8(ascii: "0") }) else { return nil }
                break
            }
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            let digit = T(c - UInt8(ascii: "0"))
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (a, o2) = negative ? m.subtractingReportingOverflow(digit) : m.addingReportingOverflow(digit)
            guard !o1, !o2 else { return nil }
            value = a
            index += 1
        }
        return value
    }
}

extension PostgresDecodable where Self: FixedWidthInteger {
    public static func decode(from cell: PostgresCell) throws -> Self {
        guard let value = PostgresInteger.parse(try cell.require(Self.self), as: Self.self) else {
            throw PostgresDecodingError.typeMismatch(Self.self)
        }
        return value
    }
}

extension Int: PostgresDecodable {}
extension Int64: PostgresDecodable {}
extension Int32: PostgresDecodable {}
extension Int16: PostgresDecodable {}

extension Double: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Double {
        let text = String(decoding: try cell.require(Double.self), as: UTF8.self)
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default:
            guard let value = Double(text) else { throw PostgresDecodingError.typeMismatch(Double.self) }
            return value
        }
    }
}

extension Bool: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Bool {
        let bytes = try cell.require(Bool.self)
        switch String(decoding: bytes, as: UTF8.self).lowercased() {
        case "t", "true", "1", "yes", "on": return true
        case "f", "false", "0", "no", "off": return false
        default: throw PostgresDecodingError.typeMismatch(Bool.self)
        }
    }
}

extension UUID: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> UUID {
        guard let uuid = UUID(uuidText: try cell.require(UUID.self)) else {
            throw PostgresDecodingError.typeMismatch(UUID.self)
        }
        return uuid
    }
}

extension Date: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Date {
        guard let date = PostgresTimestamp.parse(try cell.require(Date.self)) else {
            throw PostgresDecodingError.typeMismatch(Date.self)
        }
        return date
    }
}

extension JSONValue: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> JSONValue {
        do {
            return try JSONValue.parse(try cell.require(JSONValue.self))
        } catch is JSONParseError {
            throw PostgresDecodingError.typeMismatch(JSONValue.self)
        }
    }
}

extension Data: PostgresDecodable {
    /// Reads `bytea` hex output (`\x...`); any other column type gives its raw text bytes.
    public static func decode(from cell: PostgresCell) throws -> Data {
        let bytes = try cell.require(Data.self)
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x") else {
            if cell.typeOID == PostgresTypeOID.bytea { throw PostgresDecodingError.typeMismatch(Data.self) }
            return Data(bytes)
        }
        guard bytes.count % 2 == 0 else { throw PostgresDecodingError.typeMismatch(Data.self) }
        var out = Data(capacity: (bytes.count - 2) / 2)
        var i = 2
        while i < bytes.count {
            guard let hi = Hex.value(of: bytes[i]), let lo = Hex.value(of: bytes[i + 1]) else {
                throw PostgresDecodingError.typeMismatch(Data.self)
            }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Wrapped? {
        guard cell.bytes != nil else { return nil }
        return try Wrapped.decode(from: cell)
    }
}

extension Array: PostgresDecodable where Element: PostgresDecodable {
    /// Reads a one-dimensional array (`{a,"b c",NULL}`); NULL elements need an optional `Element`.
    public static func decode(from cell: PostgresCell) throws -> [Element] {
        // The element types a chunk's claim reads, decoded in code specialized for them: the
        // generic loop looked up `[Element]`'s metadata for every element it appended.
        if Element.self == String.self { return unsafeBitCast(try elements(cell, String.self), to: [Element].self) }
        if Element.self == UUID.self { return unsafeBitCast(try elements(cell, UUID.self), to: [Element].self) }
        return try elements(cell, Element.self)
    }

    /// The elements of `cell` as `E`: called with a concrete type, specialized for it.
    private static func elements<E: PostgresDecodable>(_ cell: PostgresCell, _ type: E.Type) throws -> [E] {
        var elements: [E] = []
        let parsed = try PostgresArrayLiteral.forEachElement(try cell.require([E].self)) { element in
            elements.append(try E.decode(from: PostgresCell(bytes: element, typeOID: 0)))
        }
        guard parsed else { throw PostgresDecodingError.typeMismatch([E].self) }
        return elements
    }
}
