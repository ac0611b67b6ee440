import BuzzKitWire
import Foundation
import Testing

/// The one shape every validator reports, and the bytes it puts in `details`.
@Suite struct ValidationIssueTests {
    @Test func jsonHasPathAndMessageAndOnlyTheExtrasThatAreSet() {
        #expect(
            ValidationIssue(path: "title", message: "must not be empty").jsonValue.jsonString
                == #"{"message":"must not be empty","path":"title"}"#)
        let expression = ValidationIssue(
            path: "where", message: "expected a value", line: 1, column: 8,
            code: "syntax_error", expected: "a value")
        #expect(
            expression.jsonValue.jsonString
                == #"{"code":"syntax_error","column":8,"expected":"a value","line":1,"message":"expected a value","path":"where"}"#
        )
        #expect(
            ValidationIssue(path: "steps[2].waitUntil.time", message: "must be HH:MM").description
                == "steps[2].waitUntil.time: must be HH:MM")
    }

    @Test func eventIssuesKeepFieldAndANullIndex() {
        #expect(
            ValidationIssue(path: "name", message: "name must be a string", index: 3).eventJSONValue.jsonString
                == #"{"field":"name","index":3,"message":"name must be a string","path":"name"}"#)
        #expect(
            ValidationIssue(path: "events", message: "events must not be empty").eventJSONValue.jsonString
                == #"{"field":"events","index":null,"message":"events must not be empty","path":"events"}"#)
    }

    @Test func apiErrorIsValidationFailedWithEveryIssueInOrder() {
        let issues = [ValidationIssue(path: "b", message: "two"), ValidationIssue(path: "a", message: "one")]
        let error = ValidationIssue.apiError(issues, message: "the request is invalid")
        #expect(error.code == .validationFailed)
        #expect(error.message == "the request is invalid")
        #expect(error.details == [["path": "b", "message": "two"], ["path": "a", "message": "one"]])
    }
}
