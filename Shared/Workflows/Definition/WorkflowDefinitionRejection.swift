import BuzzKitWire

/// Every problem found in a definition (`ValidationIssue`s with the JSON path of each), in document order.
public struct WorkflowDefinitionRejection: Error, Sendable, Hashable {
    public var issues: [ValidationIssue]

    public init(issues: [ValidationIssue]) { self.issues = issues }

    /// `validation_failed` with `details: [{path, message, line?, column?, code?, expected?}]`
    /// (`ValidationIssue.jsonValue`, the shape every validator reports).
    public var apiError: APIError {
        let summary = issues.prefix(3).map(\.description).joined(separator: "; ")
        let more = issues.count > 3 ? " (and \(issues.count - 3) more)" : ""
        return ValidationIssue.apiError(issues, message: "the workflow is invalid: \(summary)\(more)")
    }
}
