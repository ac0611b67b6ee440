import Testing
import BuzzKitWire
import BuzzKitContracts

/// The event intake's byte-level JSON parser reads what `JSONValue.parse` (JSONDecoder) reads, to
/// the same values, and refuses what is not JSON.
@Suite struct JSONBytesParserTests {
    @Test(arguments: [
        #"{"subscriberId":"u1","events":[{"id":"e1","name":"a.b","timestamp":"2024-05-01T12:00:00Z","data":{"n":42,"x":-1.5,"ok":true,"none":null}}]}"#,
        #"  [1, -0, 0.25, -2E-2, 9223372036854775807, 12345678901234567890]  "#,
        #"{"esc":"quote \" slash \\ \/ \b\f\n\r\t","u":"\u00e9\u4e2d\ud83d\ude00","raw":"é中😀"}"#,
        #"{"nested":{"a":[{},[],{"b":[null]}]}}"#,
        #""just a string""#, "true", "false", "null", "0", "-12",
    ])
    func parsesLikeJSONDecoder(text: String) throws {
        let fast = try JSONBytesParser.parse(Array(text.utf8))
        let reference = try JSONValue.parse(text)
        #expect(fast == reference)
    }

    @Test func keepsIntegersApartFromDoublesAndTheLastOfARepeatedKey() throws {
        #expect(try JSONBytesParser.parse(Array("[42, 42.5, 4e1]".utf8)) == .array([.int(42), .double(42.5), .double(40)]))
        #expect(try JSONBytesParser.parse(Array(#"{"k":1,"k":2}"#.utf8)) == ["k": 2])
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", #"{"a":1,}"#, #"{"a" 1}"#, "{a:1}", "01", "-", "1.", "1e", ".5", "+1", "tru", "nul",
        #""unterminated"#, "\"tab\there\"", #""bad \x escape""#, #""\ud83d alone""#, "[1] [2]", "1e999",
        "// comment\n1", "NaN",
    ])
    func refusesWhatIsNotJSON(text: String) {
        #expect(throws: JSONBytesParser.Failure.self) { try JSONBytesParser.parse(Array(text.utf8)) }
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONBytesParser.Failure.self) { try JSONBytesParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
        let deep = Array(String(repeating: "[", count: 600).utf8) + Array(String(repeating: "]", count: 600).utf8)
        #expect(throws: JSONBytesParser.Failure.self) { try JSONBytesParser.parse(deep) }
        let fine = Array(String(repeating: "[", count: 100).utf8) + Array(String(repeating: "]", count: 100).utf8)
        #expect((try? JSONBytesParser.parse(fine)) != nil)
    }

    @Test func errorsSayWhere() {
        do {
            _ = try JSONBytesParser.parse(Array(#"{"a":[1,2,}"#.utf8))
            Issue.record("expected a failure")
        } catch {
            #expect(error.description.contains("byte 10"))
        }
    }
}
