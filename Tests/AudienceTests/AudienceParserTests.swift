import BuzzKitAudience
import BuzzKitWire
import Testing

struct ErrorCase: Sendable, CustomTestStringConvertible {
    var text: String
    var code: AudienceError.Code
    var line: Int
    var column: Int
    var messageContains: String
    var testDescription: String { text.replacingOccurrences(of: "\n", with: "\\n") }
}

let errorCases: [ErrorCase] = [
    ErrorCase(text: #"plan = "pro""#, code: .syntaxError, line: 1, column: 6, messageContains: "'=='"),
    ErrorCase(text: "plan == ", code: .syntaxError, line: 1, column: 9, messageContains: "expected a value"),
    ErrorCase(
        text: #"plan == "pro" and"#, code: .syntaxError, line: 1, column: 18,
        messageContains: "expected a condition but found end of input"),
    ErrorCase(
        text: "plan == \"pro\"\n  and (age > 3", code: .syntaxError, line: 2, column: 15,
        messageContains: "expected ')'"),
    ErrorCase(
        text: "a == 1 and\n\n   b ==", code: .syntaxError, line: 3, column: 8, messageContains: "expected a value"),
    ErrorCase(text: #"plan == "pro" or or"#, code: .syntaxError, line: 1, column: 18, messageContains: "found 'or'"),
    ErrorCase(text: #""x" == plan"#, code: .syntaxError, line: 1, column: 1, messageContains: "expected a condition"),
    ErrorCase(
        text: #"plan in ["a" "b"]"#, code: .syntaxError, line: 1, column: 14, messageContains: "expected ',' or ']'"),
    ErrorCase(
        text: #"plan == "unterminated"#, code: .syntaxError, line: 1, column: 9, messageContains: "unterminated string"),
    ErrorCase(text: #"foo("x")"#, code: .syntaxError, line: 1, column: 1, messageContains: "unknown function 'foo'"),
    ErrorCase(text: "plan", code: .syntaxError, line: 1, column: 5, messageContains: "expected a comparison operator"),
    ErrorCase(text: "plan == pro", code: .syntaxError, line: 1, column: 9, messageContains: "expected a value"),
    ErrorCase(text: "age >= 01", code: .syntaxError, line: 1, column: 8, messageContains: "malformed number"),
    ErrorCase(text: "", code: .syntaxError, line: 1, column: 1, messageContains: "expected a condition"),
    ErrorCase(text: "age >= true", code: .invalidValue, line: 1, column: 8, messageContains: "true and false"),
    ErrorCase(text: #"did("x", within: "7x")"#, code: .invalidValue, line: 1, column: 18, messageContains: "duration"),
    ErrorCase(
        text: #"did("x", when: "7d")"#, code: .syntaxError, line: 1, column: 10,
        messageContains: "'within:' or 'where:'"),
    ErrorCase(
        text: #"did("a", where: in_topic("x"))"#, code: .invalidValue, line: 1, column: 17,
        messageContains: "not available"),
    ErrorCase(text: #"count("a") >= "3""#, code: .syntaxError, line: 1, column: 15, messageContains: "whole number"),
    ErrorCase(
        text: #"count("a") 3"#, code: .syntaxError, line: 1, column: 12,
        messageContains: "comparison operator after count"),
    ErrorCase(
        text: #"has_device(environment: "staging")"#, code: .invalidValue, line: 1, column: 25,
        messageContains: "production"),
    ErrorCase(text: "timezone == 3", code: .invalidValue, line: 1, column: 13, messageContains: "timezone"),
    ErrorCase(text: #"createdAt > "yesterday""#, code: .invalidValue, line: 1, column: 13, messageContains: "ISO 8601"),
    ErrorCase(text: "`0` == 1", code: .invalidValue, line: 1, column: 1, messageContains: "integer"),
    ErrorCase(text: "`` == 1", code: .invalidValue, line: 1, column: 1, messageContains: "empty"),
    ErrorCase(text: #"plan == "a\qb""#, code: .syntaxError, line: 1, column: 11, messageContains: "invalid escape"),
    ErrorCase(text: "  plan ~ 1", code: .syntaxError, line: 1, column: 8, messageContains: "unexpected character"),
    ErrorCase(
        text: #"did("x", within: "500d")"#, code: .limitExceeded, line: 1, column: 18, messageContains: "400 days")
]

@Suite("Audience: parsing")
struct AudienceParserTests {
    @Test(arguments: errorCases)
    func errorsPointAtTheProblem(_ testCase: ErrorCase) {
        do {
            let expression = try AudienceExpression.parse(testCase.text)
            Issue.record("parsed \(testCase.text) as \(expression)")
        } catch {
            #expect(error.code == testCase.code, "\(error)")
            #expect(error.line == testCase.line && error.column == testCase.column, "\(error)")
            #expect(error.description.contains(testCase.messageContains), "\(error)")
        }
    }

    @Test func parsesTheDocumentedForms() throws {
        let e = try AudienceExpression.parse(
            #"plan == "pro" and (profile.age >= 18 or not exists(email)) and country in ["DE","AT"]"#)
        #expect(
            e
                == .and([
                    .compare(.attribute(["plan"]), .equal, .string("pro")),
                    .or([
                        .compare(.attribute(["profile", "age"]), .greaterOrEqual, .number(AudienceNumber("18")!)),
                        .not(.exists(.attribute(["email"])))
                    ]),
                    .isIn(.attribute(["country"]), [.string("DE"), .string("AT")])
                ]))
        let d = try AudienceExpression.parse(#"did("cart.checked_out", within: "7d", where: total > 40)"#)
        #expect(
            d
                == .did(
                    AudienceEventClause(
                        name: "cart.checked_out", withinSeconds: 604_800,
                        condition: .compare(.attribute(["total"]), .greater, .number(AudienceNumber("40")!)))))
        #expect(
            try AudienceExpression.parse(#"count("app.opened", within: "30d") >= 3"#)
                == .count(AudienceEventClause(name: "app.opened", withinSeconds: 2_592_000), .greaterOrEqual, 3))
        #expect(try AudienceExpression.parse("timezone == \"UTC\"") == .compare(.timezone, .equal, .string("UTC")))
        #expect(
            try AudienceExpression.parse("`timezone` == \"UTC\"")
                == .compare(.attribute(["timezone"]), .equal, .string("UTC")))
        #expect(
            try AudienceExpression.parse(#"has_device(environment: "production")"#)
                == .hasDevice(environment: "production"))
        #expect(
            try AudienceExpression.parse(#"name == "a\"b\\c\u00e9""#)
                == .compare(.attribute(["name"]), .equal, .string("a\"b\\cé")))
    }

    @Test func errorBecomesValidationFailed() {
        do {
            _ = try AudienceExpression.parse("plan ==")
            Issue.record("parsed")
        } catch {
            let api = error.apiError(field: "where")
            #expect(api.code == .validationFailed)
            let detail = api.details?.arrayValue?.first
            #expect(detail?["line"] == 1)
            #expect(detail?["column"] == 8)
            #expect(detail?["path"] == "where")
        }
    }

    @Test func eventContextEvaluatesOnData() throws {
        let e = try AudienceExpression.parse(#"total > 40 and currency == "EUR""#, context: .event)
        #expect(e.matches(eventData: ["total": 41, "currency": "EUR"]))
        #expect(!e.matches(eventData: ["total": "41", "currency": "EUR"]))
        #expect(!e.matches(eventData: ["currency": "EUR"]))
        // Field names are plain data keys in the event context.
        #expect(
            try AudienceExpression.parse(#"timezone == "x""#, context: .event).matches(eventData: ["timezone": "x"]))
        #expect(throws: AudienceError.self) { try AudienceExpression.parse(#"in_topic("a")"#, context: .event) }
    }
}

@Suite("Audience: limits")
struct AudienceLimitTests {
    func limitError(_ text: String) -> AudienceError? {
        do {
            _ = try AudienceExpression.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func length() {
        let text = "plan == \"" + String(repeating: "x", count: 5000) + "\""
        let error = limitError(text)
        #expect(error?.code == .limitExceeded)
        #expect(error?.column == AudienceLimits.default.maxLength + 1)
    }

    @Test func depth() {
        let text = String(repeating: "(", count: 20) + "a == 1" + String(repeating: ")", count: 20)
        let error = limitError(text)
        #expect(error?.code == .limitExceeded)
        #expect(error?.column == AudienceLimits.default.maxDepth + 1)
        let notChain = String(repeating: "not ", count: 17) + "a == 1"
        #expect(limitError(notChain)?.code == .limitExceeded)
        #expect(limitError(String(repeating: "not ", count: 16) + "a == 1") == nil)
    }

    @Test func eventClauses() {
        let six = (0..<6).map { _ in #"did("e")"# }.joined(separator: " or ")
        let error = limitError(six)
        #expect(error?.code == .limitExceeded)
        #expect(error?.column == 5 * #"did("e") or "#.count + 1)
        #expect(limitError((0..<5).map { _ in #"count("e") > 1"# }.joined(separator: " and ")) == nil)
    }

    @Test func conditionsAndLists() {
        #expect(limitError((0..<65).map { "a\($0) == 1" }.joined(separator: " or "))?.code == .limitExceeded)
        #expect(limitError((0..<64).map { "a\($0) == 1" }.joined(separator: " or ")) == nil)
        #expect(limitError("a in [" + (0..<101).map(String.init).joined(separator: ",") + "]")?.code == .limitExceeded)
        #expect(limitError("a in [" + (0..<100).map(String.init).joined(separator: ",") + "]") == nil)
    }
}
