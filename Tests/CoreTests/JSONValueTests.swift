import BuzzKitWire
import Foundation
import Testing

@Suite struct JSONValueTests {
    @Test(arguments: [
        ("null", JSONValue.null), ("true", .bool(true)), ("42", .int(42)), ("-7", .int(-7)), ("1.5", .double(1.5)),
        ("\"hé\\n\"", .string("hé\n")), ("[1,\"a\",null]", .array([1, "a", nil])),
        ("{\"a\":{\"b\":[true]}}", .object(["a": ["b": [true]]]))
    ])
    func parsesEveryKind(text: String, expected: JSONValue) throws {
        #expect(try JSONValue.parse(text) == expected)
    }

    @Test func integersStayIntegersThroughARoundTrip() throws {
        let value: JSONValue = ["count": 42, "ratio": 0.25, "big": .int(9_007_199_254_740_993)]
        #expect(try JSONValue.parse(value.jsonBytes) == value)
        #expect(value.jsonString == #"{"big":9007199254740993,"count":42,"ratio":0.25}"#)
    }

    @Test func writerEscapesControlCharactersAndQuotes() throws {
        let value = JSONValue.string("a\"b\\c\u{01}\t")
        #expect(value.jsonString == #""a\"b\\c\u0001\t""#)
        #expect(try JSONValue.parse(value.jsonBytes) == value)
    }

    /// Strings mixing plain runs, escapes at either end and non-ASCII text come back as written,
    /// and read the same through Foundation's parser.
    @Test func writerKeepsEveryStringIntact() throws {
        let pieces = ["plain", "\"", "\\", "\n", "\r", "\t", "\u{00}", "\u{1F}", "\u{7F}", "é", "🎉", "/", " "]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let text = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }.joined()
            let value = JSONValue.string(text)
            #expect(try JSONValue.parse(value.jsonBytes) == value)
            let foundation =
                try JSONSerialization.jsonObject(with: Data(("[" + value.jsonString + "]").utf8)) as? [String]
            #expect(foundation == [text])
        }
    }

    /// A success envelope around already-encoded data is byte for byte the envelope of the value.
    @Test func encodedSuccessIsTheSuccessEnvelope() {
        let values: [JSONValue] = [
            ["id": "s1", "attributes": ["plan": "pro"], "timezone": nil], [1, "two"], "text", nil
        ]
        for value in values {
            #expect(
                Envelope.encodedSuccess(encodedData: value.jsonBytes, requestId: "req-\"1\"")
                    == Envelope.success(value).encoded(requestId: "req-\"1\""))
        }
    }

    @Test func invalidJSONReportsAReason() {
        #expect(throws: JSONParseError.self) { try JSONValue.parse("{\"a\": }") }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("") }
    }

    @Test func literalsAndAccessors() {
        let value: JSONValue = ["name": "legs", "duration": 42, "ok": true, "items": ["mat"], "coupon": nil]
        #expect(value["name"]?.stringValue == "legs")
        #expect(value["duration"]?.intValue == 42)
        #expect(value["ok"]?.boolValue == true)
        #expect(value["items"]?.arrayValue?.count == 1)
        #expect(value["coupon"]?.isNull == true)
        #expect(value["missing"] == nil)
    }
}

@Suite struct EnvelopeTests {
    @Test func successCarriesDataAndRequestId() throws {
        let bytes = Envelope.success(["id": "s1"], metadata: ["hasMore": false]).encoded(requestId: "req-1")
        let value = try JSONValue.parse(bytes)
        #expect(value["success"] == true)
        #expect(value["data"]?["id"] == "s1")
        #expect(value["error"] == .null)
        #expect(value["metadata"]?["requestId"] == "req-1")
        #expect(value["metadata"]?["hasMore"] == false)
    }

    @Test func failureCarriesCodeMessageAndDetails() throws {
        let error = APIError(.validationFailed, "2 fields are invalid", details: [["path": "timezone"]])
        let decoded = try Envelope.decode(Envelope.failure(error).encoded(requestId: "r"))
        #expect(decoded.success == false)
        #expect(decoded.error == error)
        #expect(decoded.data == nil)
        #expect(decoded.metadata["requestId"] == "r")
    }

    @Test func everyErrorCodeIsSnakeCaseAndUnique() {
        let names = ErrorCode.all.map(\.rawValue)
        #expect(Set(names).count == names.count)
        for name in names {
            #expect(name.allSatisfy { $0.isLowercase || $0 == "_" }, "\(name) is not snake_case")
        }
        #expect(ErrorCode.payloadTooLarge.httpStatus == 413)
        #expect(ErrorCode.notFound.httpStatus == 404)
    }
}
