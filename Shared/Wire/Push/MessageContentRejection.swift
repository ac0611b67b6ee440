/// Every problem found in a message's content, in field order.
public struct MessageContentRejection: Error, Sendable, Hashable {
    public var issues: [ValidationIssue]

    public init(issues: [ValidationIssue]) { self.issues = issues }

    /// The API error for these issues (`validation_failed`, details `{"issues": [...]}`).
    public var apiError: APIError {
        let summary = issues.prefix(3).map(\.description).joined(separator: "; ")
        return APIError(
            .validationFailed, "the message is invalid: \(summary)",
            details: ["issues": .array(issues.map(\.jsonValue))])
    }
}
