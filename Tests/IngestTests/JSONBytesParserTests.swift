import BuzzKitWire
import Foundation
import Testing

/// `JSONValue.parse` (the byte-level parser in BuzzKitWire) reads what `JSONDecoder` reads, to the
/// same values, and refuses what is not JSON.
@Suite struct JSONBytesParserTests {
    @Test(arguments: [
        #"{"subscriberId":"u1","events":[{"id":"e1","name":"a.b","timestamp":"2024-05-01T12:00:00Z","data":{"n":42,"x":-1.5,"ok":true,"none":null}}]}"#,
        #"  [1, -0, 0.25, -2E-2, 9223372036854775807, 12345678901234567890]  "#,
        #"{"esc":"quote \" slash \\ \/ \b\f\n\r\t","u":"\u00e9\u4e2d\ud83d\ude00","raw":"é中😀"}"#,
        #"{"nested":{"a":[{},[],{"b":[null]}]}}"#,
        #""just a string""#, "true", "false", "null", "0", "-12",
        "[1.0, 4e1, -0.0, 1.5e1, 0.5, 1e19, 9223372036854775808, -9223372036854775808]", "\u{FEFF}{\"bom\":1}"
    ])
    func parsesLikeJSONDecoder(text: String) throws {
        let fast = try JSONValue.parse(Array(text.utf8))
        let reference = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(fast == reference)
        #expect(try JSONValue.parse(text) == reference)
    }

    @Test func integersStayIntegersAndTheLastOfARepeatedKeyWins() throws {
        #expect(
            try JSONValue.parse(Array("[42, 42.5, 4e1, 1.0]".utf8))
                == .array([.int(42), .double(42.5), .int(40), .int(1)]))
        #expect(try JSONValue.parse(Array(#"{"k":1,"k":2}"#.utf8)) == ["k": 2])
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", #"{"a":1,}"#, #"{"a" 1}"#, "{a:1}", "01", "-", "1.", "1e", ".5", "+1", "tru", "nul",
        #""unterminated"#, "\"tab\there\"", #""bad \x escape""#, #""\ud83d alone""#, "[1] [2]", "1e999",
        "// comment\n1", "NaN"
    ])
    func refusesWhatIsNotJSON(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array(text.utf8)) }
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONParseError.self) { try JSONValue.parse([0x22, 0xFF, 0xFE, 0x22]) }
        let deep = Array(String(repeating: "[", count: 600).utf8) + Array(String(repeating: "]", count: 600).utf8)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(deep) }
        let fine = Array(String(repeating: "[", count: 100).utf8) + Array(String(repeating: "]", count: 100).utf8)
        #expect((try? JSONValue.parse(fine)) != nil)
    }

    @Test func errorsSayWhere() {
        do {
            _ = try JSONValue.parse(Array(#"{"a":[1,2,}"#.utf8))
            Issue.record("expected a failure")
        } catch {
            #expect(error.description.contains("byte 10"))
        }
    }
}
