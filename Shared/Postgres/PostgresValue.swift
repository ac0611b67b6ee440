import BuzzKitWire

/// One bound statement parameter, already encoded: bytes in PostgreSQL's text format (or binary,
/// for `bytea`), or SQL NULL.
///
/// `typeOID` 0 lets the server infer the type from the statement (`WHERE id = $1` reads `$1` as
/// the column's type), which is what nearly every parameter wants; only `bytea` is sent typed and
/// in binary, where it saves the hex round trip.
public struct PostgresValue: Sendable, Hashable {
    public enum Format: Int32, Sendable, Hashable {
        case text = 0
        case binary = 1
    }

    /// The encoded bytes; `nil` is SQL NULL.
    public var bytes: [UInt8]?
    public var format: Format
    public var typeOID: UInt32

    public init(bytes: [UInt8]?, format: Format = .text, typeOID: UInt32 = 0) {
        self.bytes = bytes
        self.format = format
        self.typeOID = typeOID
    }

    /// A text-format value; `nil` is NULL.
    public init(text: String?, typeOID: UInt32 = 0) {
        self.init(bytes: text.map { Array($0.utf8) }, format: .text, typeOID: typeOID)
    }

    public static let null = PostgresValue(bytes: nil)
    public var isNull: Bool { bytes == nil }
}

extension PostgresValue: PostgresEncodable {
    public var postgresValue: PostgresValue { self }
    public var postgresText: String? {
        guard let bytes else { return nil }
        switch format {
        case .text: return String(decoding: bytes, as: UTF8.self)
        case .binary: return PostgresHex.byteaText(bytes)
        }
    }
}

/// Well-known type OIDs (`pg_type.oid`), for reading `PostgresRows.columnTypes`.
public enum PostgresTypeOID {
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let json: UInt32 = 114
    public static let float4: UInt32 = 700
    public static let float8: UInt32 = 701
    public static let varchar: UInt32 = 1043
    public static let date: UInt32 = 1082
    public static let timestamp: UInt32 = 1114
    public static let timestamptz: UInt32 = 1184
    public static let numeric: UInt32 = 1700
    public static let uuid: UInt32 = 2950
    public static let jsonb: UInt32 = 3802
    public static let textArray: UInt32 = 1009
    public static let int8Array: UInt32 = 1016
}

/// `bytea` in text form.
enum PostgresHex {
    /// `bytea` hex text form: `\x0a1b`.
    static func byteaText(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(2 + bytes.count * 2)
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "x"))
        Hex.append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
