import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@Suite("Postgres type coding against the server", .requiresPostgres)
struct PostgresCodingTests {
    /// `SELECT $1::type` with the value, then with NULL, both decoded back.
    func roundTrip<T: PostgresEncodable & PostgresDecodable & Equatable>(
        _ value: T, as type: String, client: PostgresClient, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let rows = try await client.query("SELECT $1::\(type), $2::\(type)", [value, T?.none])
        #expect(rows.count == 1, sourceLocation: sourceLocation)
        #expect(try rows[0].decode(T.self, at: 0) == value, sourceLocation: sourceLocation)
        #expect(try rows[0].decode(T?.self, at: 1) == nil, sourceLocation: sourceLocation)
        #expect(rows[0].isNull(at: 1), sourceLocation: sourceLocation)
    }

    /// `PostgresArrayText` literals read back as the elements written: quotes, backslashes,
    /// commas, braces and non-ASCII text in quoted elements, NULLs, integers and UUIDs bare.
    @Test func arrayTextRoundTrips() async throws {
        try await withClient { (client: PostgresClient) async throws in
            let texts: [String?] = [
                "plain", "", "a\"b", "back\\slash", "{braces},commas", "NULL", nil, "héllo 👋", " spaced "
            ]
            var textArray = PostgresArrayText()
            #expect(textArray.isEmpty)
            for text in texts { textArray.append(text) }
            textArray.append(utf8: Array(#"{"json":"v\"q"}"#.utf8))
            #expect(!textArray.isEmpty)
            let ids = [UUID(), UUID()]
            var idArray = PostgresArrayText()
            for id in ids { idArray.append(id) }
            var numbers = PostgresArrayText()
            for number in [0, -7, Int.max] { numbers.append(number) }
            numbers.append(Int?.none)
            let rows = try await client.query(
                """
                SELECT (SELECT array_agg(coalesce(t, '<null>') ORDER BY n) FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n)),
                       $2::uuid[] = $3::uuid[], $4::int8[] = ARRAY[0, -7, \(Int.max), NULL]::int8[] IS NOT FALSE,
                       cardinality($4::int8[]), ($4::int8[])[4] IS NULL, cardinality($5::text[])
                """,
                [
                    textArray.value, idArray.value, ids.map { $0.lowercasedText }, numbers.value,
                    PostgresArrayText().value
                ])
            let expected = texts.map { $0 ?? "<null>" } + [#"{"json":"v\"q"}"#]
            #expect(try rows[0].decode([String].self, at: 0) == expected)
            #expect(try rows[0].decode(Bool.self, at: 1))
            #expect(try rows[0].decode(Bool.self, at: 2))
            #expect(try rows[0].decode(Int.self, at: 3) == 4)
            #expect(try rows[0].decode(Bool.self, at: 4))
            #expect(try rows[0].decode(Int.self, at: 5) == 0)
        }
    }

    @Test func scalarsRoundTrip() async throws {
        try await withClient { (client: PostgresClient) async throws in
            try await roundTrip("héllo, \"world\"\\ \n\t 👋", as: "text", client: client)
            try await roundTrip("", as: "text", client: client)
            try await roundTrip(Int.max, as: "int8", client: client)
            try await roundTrip(Int64.min, as: "int8", client: client)
            try await roundTrip(Int32.min, as: "int4", client: client)
            try await roundTrip(Int16.max, as: "int2", client: client)
            try await roundTrip(-12345, as: "int4", client: client)
            try await roundTrip(3.141592653589793, as: "float8", client: client)
            try await roundTrip(-0.000001, as: "float8", client: client)
            try await roundTrip(Double.infinity, as: "float8", client: client)
            try await roundTrip(true, as: "bool", client: client)
            try await roundTrip(false, as: "bool", client: client)
            try await roundTrip(UUID(), as: "uuid", client: client)
            try await roundTrip(Date(timeIntervalSince1970: 1_714_564_800.25), as: "timestamptz", client: client)
            try await roundTrip(Date(timeIntervalSince1970: -2_208_988_800.5), as: "timestamptz", client: client)
            try await roundTrip(Data([0, 1, 2, 0xfe, 0xff, 0x5c, 0x27]), as: "bytea", client: client)
            try await roundTrip(Data(), as: "bytea", client: client)
            let json: JSONValue = ["a": 1, "b": [true, nil, 2.5, "x\"y"], "c": ["nested": "ü"]]
            try await roundTrip(json, as: "jsonb", client: client)
            try await roundTrip(json, as: "json", client: client)
            try await roundTrip(JSONValue.null, as: "jsonb", client: client)
        }
    }

    @Test func arraysRoundTrip() async throws {
        try await withClient { (client: PostgresClient) async throws in
            try await roundTrip(
                ["a", "b c", "quote\"d", "back\\slash", "NULL", "", "{x,y}"], as: "text[]", client: client)
            try await roundTrip([String](), as: "text[]", client: client)
            try await roundTrip([Int64(1), -2, Int64.max], as: "int8[]", client: client)
            try await roundTrip([1, 2, 3], as: "int4[]", client: client)
            try await roundTrip([UUID(), UUID()], as: "uuid[]", client: client)
            try await roundTrip([true, false], as: "bool[]", client: client)
            try await roundTrip(["x", nil, "z"] as [String?], as: "text[]", client: client)
            // NULL elements need an optional element type.
            let rows = try await client.query("SELECT ARRAY['a', NULL]::text[]")
            #expect(throws: PostgresDecodingError.self) { try rows[0].decode([String].self, at: 0) }
            // ANY($1) with an array parameter.
            let any = try await client.query("SELECT 2 = ANY($1::int8[]), 5 = ANY($1::int8[])", [[1, 2, 3]])
            #expect(try any[0].decode((Bool, Bool).self) == (true, false))
        }
    }

    @Test func serverTextFormsDecode() async throws {
        try await withClient { (client: PostgresClient) async throws in
            let rows = try await client.query(
                """
                SELECT '2024-02-29 23:59:59.123456+05:30'::timestamptz,
                       '2024-02-29 23:59:59'::timestamp,
                       '2024-03-01'::date,
                       12.000::numeric,
                       '1e300'::float8,
                       '{"k": [1, 2]}'::json,
                       decode('00ff', 'hex')
                """)
            let row = rows[0]
            let expected = Date(timeIntervalSince1970: 1_709_231_399.123456)
            #expect(abs(try row.decode(Date.self, at: 0).timeIntervalSince(expected)) < 0.000_001)
            #expect(try row.decode(Date.self, at: 1) == Date(timeIntervalSince1970: 1_709_251_199))
            #expect(try row.decode(Date.self, at: 2) == Date(timeIntervalSince1970: 1_709_251_200))
            #expect(try row.decode(Int.self, at: 3) == 12)
            #expect(try row.decode(Double.self, at: 4) == 1e300)
            #expect(try row.decode(JSONValue.self, at: 5) == ["k": [1, 2]])
            #expect(try row.decode(Data.self, at: 6) == Data([0, 0xff]))
        }
    }

    @Test func tableRowDecodesByNameAndTuple() async throws {
        try await withClient(schema: TestEnvironment.uniqueName("coding")) { (client: PostgresClient) async throws in
            let table = "t"
            try await client.execute(
                "CREATE TABLE \(table) (id uuid PRIMARY KEY, name text, n int8, tags text[], doc jsonb, at timestamptz)"
            )
            let id = UUID()
            let at = Date(timeIntervalSince1970: 1_700_000_000.5)
            let inserted = try await client.execute(
                "INSERT INTO \(table) VALUES ($1, $2, $3, $4, $5, $6)",
                [id, String?.none, 42, ["x", "y"], ["k": "v"] as JSONValue, at])
            #expect(inserted == 1)
            let rows = try await client.query("SELECT id, name, n, tags, doc, at FROM \(table) WHERE id = $1", [id])
            #expect(rows.count == 1)
            let row = try #require(rows.first)
            let (gotID, name, n, tags, doc, gotAt) = try row.decode(
                (UUID, String?, Int, [String], JSONValue, Date).self)
            #expect(gotID == id && name == nil && n == 42 && tags == ["x", "y"] && doc == ["k": "v"] && gotAt == at)
            #expect(try row["n", as: Int64.self] == 42)
            #expect(try row["name", as: String?.self] == nil)
            #expect(throws: PostgresDecodingError.self) { try row["name", as: String.self] }
            #expect(throws: PostgresDecodingError.self) { try row["missing", as: String.self] }
            #expect(throws: PostgresDecodingError.self) { try row.decode(Int.self, at: 9) }
            #expect(throws: PostgresDecodingError.self) { try row.decode(Int.self, at: 0) }
            #expect(rows.columns == ["id", "name", "n", "tags", "doc", "at"])
        }
    }
}
