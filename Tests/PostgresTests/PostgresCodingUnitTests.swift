import BuzzKitPostgres
import Foundation
import Testing

/// Decoding of PostgreSQL's text forms, no server needed.
@Suite("Postgres text forms")
struct PostgresCodingUnitTests {
    static func decode<T: PostgresDecodable>(_ text: String, as type: T.Type, oid: UInt32 = 0) throws -> T {
        try Array(text.utf8).withUnsafeBytes { try T.decode(from: PostgresCell(bytes: $0, typeOID: oid)) }
    }

    @Test(arguments: [
        ("2024-05-01 12:00:00+00", 1_714_564_800.0),
        ("2024-05-01 12:00:00.5+00", 1_714_564_800.5),
        ("2024-05-01 12:00:00.123456+00", 1_714_564_800.123456),
        ("2024-05-01 14:30:00+02:30", 1_714_564_800.0),
        ("2024-05-01 07:00:00-05", 1_714_564_800.0),
        ("2024-05-01 12:00:00Z", 1_714_564_800.0),
        ("2024-05-01T12:00:00.000001Z", 1_714_564_800.000001),
        ("2024-05-01 12:00:00", 1_714_564_800.0),
        ("2024-05-01", 1_714_521_600.0),
        ("1969-12-31 23:59:59.75+00", -0.25),
        ("1900-01-01 00:09:21+00:09:21", -2_208_988_800.0)
    ])
    func timestampsParse(text: String, seconds: Double) throws {
        let date = try Self.decode(text, as: Date.self)
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.000_001)
    }

    @Test(arguments: ["", "2024-13-01", "2024-05-01 12", "infinity", "2024-05-01 12:00:00+", "yesterday"])
    func badTimestampsFail(text: String) {
        #expect(throws: PostgresDecodingError.self) { try Self.decode(text, as: Date.self) }
    }

    @Test func dateFormatsInUTCWithMicroseconds() throws {
        let date = Date(timeIntervalSince1970: 1_714_564_800.25)
        #expect(date.postgresText == "2024-05-01 12:00:00.250000+00")
        #expect(Date(timeIntervalSince1970: -0.25).postgresText == "1969-12-31 23:59:59.750000+00")
    }

    @Test func arrayLiteralsParse() throws {
        #expect(
            try Self.decode(#"{a,"b c",NULL,"NULL","q\"x","\\"}"#, as: [String?].self) == [
                "a", "b c", nil, "NULL", "q\"x", "\\"
            ])
        #expect(
            try Self.decode(#"{ a , "b" ,c\,d,null,Null, "e\\f"}"#, as: [String?].self) == [
                "a", "b", "c,d", nil, nil, "e\\f"
            ])
        #expect(try Self.decode(#"{x\ y\ ,"",z}"#, as: [String?].self) == ["x y", "", "z"])
        #expect(try Self.decode("{}", as: [Int].self) == [])
        #expect(try Self.decode("{1,-2,3}", as: [Int64].self) == [1, -2, 3])
        #expect(throws: PostgresDecodingError.self) { try Self.decode("{{1,2},{3,4}}", as: [Int].self) }
        #expect(["a", nil, "b\"c"].postgresText == #"{"a",NULL,"b\"c"}"#)
    }

    /// The flat form reads the same elements as the array form, NULLs, quotes, escapes, spaces
    /// and an empty element included, and refuses what the array form refuses.
    @Test func flatArraysReadWhatArraysRead() throws {
        for text in [
            #"{a,"b c",NULL,"NULL","q\"x","\\",null,"",x  ,  "y" }"#, "{}", "[1:2]={p,q}", "{,}", "{a,,b}"
        ] {
            let flat = try? Self.decode(text, as: PostgresFlatArray.self)
            let array = try? Self.decode(text, as: [String?].self)
            #expect((flat == nil) == (array == nil), "\(text)")
            guard let flat, let array else { continue }
            let read = (0..<flat.count).map {
                flat.isNull($0) ? nil : String(decoding: flat.bytes[flat.range($0)], as: UTF8.self)
            }
            #expect(read == array, "\(text)")
        }
        #expect(throws: PostgresDecodingError.self) { try Self.decode("{{1,2}}", as: PostgresFlatArray.self) }
        #expect(throws: PostgresDecodingError.self) { try Self.decode(#"{"open}"#, as: PostgresFlatArray.self) }
    }

    /// The byte-level writer a bound array goes through: escapes only `"` and `\`, keeps every
    /// other byte (UTF-8 included), and reads back equal.
    @Test func arrayLiteralBytesRoundTrip() throws {
        let elements: [String?] = ["", "plain", #"{"k":"v\\n"}"#, "\\", "\"", "ünïcødé ✓", nil, #"a\"b\\c"#]
        let value = elements.postgresValue
        #expect(value.bytes.map { String(decoding: $0, as: UTF8.self) } == elements.postgresText)
        let text = try #require(elements.postgresText)
        #expect(try Self.decode(text, as: [String?].self) == elements)
    }

    @Test func integersRejectOverflowAndJunk() {
        #expect(throws: PostgresDecodingError.self) { try Self.decode("40000", as: Int16.self) }
        #expect(throws: PostgresDecodingError.self) { try Self.decode("12abc", as: Int.self) }
        #expect(throws: PostgresDecodingError.self) { try Self.decode("1.5", as: Int.self) }
        #expect((try? Self.decode("-32768", as: Int16.self)) == Int16.min)
    }

    @Test func nullNeedsOptional() throws {
        #expect(throws: PostgresDecodingError.self) { try String.decode(from: PostgresCell(bytes: nil, typeOID: 25)) }
        #expect(try String?.decode(from: PostgresCell(bytes: nil, typeOID: 25)) == nil)
    }
}
