/// One thing wrong with a message's content: where (`title`, `actions[2].id`, `payload`) and why.
///
/// Validation collects every problem rather than stopping at the first, so a caller fixes a request
/// in one round; the gateway answers them as `validation_failed` details.
public struct PushValidationIssue: Sendable, Hashable, CustomStringConvertible {
    /// The member's path in the request body: `title`, `action.name`, `actions[1].title`, or
    /// `payload` for the encoded size.
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `{"path": "...", "message": "..."}`.
    public var jsonValue: JSONValue { ["path": .string(path), "message": .string(message)] }

    public var description: String { "\(path): \(message)" }
}

/// Every problem found in a message's content, in field order.
public struct MessageContentRejection: Error, Sendable, Hashable {
    public var issues: [PushValidationIssue]

    public init(issues: [PushValidationIssue]) { self.issues = issues }

    /// The API error for these issues (`validation_failed`, details `{"issues": [...]}`).
    public var apiError: APIError {
        let summary = issues.prefix(3).map(\.description).joined(separator: "; ")
        return APIError(.validationFailed, "the message is invalid: \(summary)",
                        details: ["issues": .array(issues.map(\.jsonValue))])
    }
}
