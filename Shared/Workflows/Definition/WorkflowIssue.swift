import BuzzKitWire

/// One problem with a workflow definition: where (`steps[2].waitUntil.time`), why, and for an
/// expression or template the 1-based line and column inside the string.
///
/// Validation collects every problem rather than stopping at the first (the gateway answers them
/// all as `validation_failed` details). Shaped like the Wire module's validation issues
/// (`{path, message}`) plus the optional position.
public struct WorkflowIssue: Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var message: String
    public var line: Int?
    public var column: Int?

    public init(path: String, message: String, line: Int? = nil, column: Int? = nil) {
        self.path = path
        self.message = message
        self.line = line
        self.column = column
    }

    /// `{"path", "message", "line"?, "column"?}`.
    public var jsonValue: JSONValue {
        var o: [String: JSONValue] = ["path": .string(path), "message": .string(message)]
        if let line { o["line"] = .int(Int64(line)) }
        if let column { o["column"] = .int(Int64(column)) }
        return .object(o)
    }

    public var description: String {
        if let line, let column { return "\(path): line \(line), column \(column): \(message)" }
        return "\(path): \(message)"
    }
}

/// Every problem found in a definition, in document order.
public struct WorkflowDefinitionRejection: Error, Sendable, Hashable {
    public var issues: [WorkflowIssue]

    public init(issues: [WorkflowIssue]) { self.issues = issues }

    /// `validation_failed` with `details: [{path, message, line?, column?}]`.
    public var apiError: APIError {
        let summary = issues.prefix(3).map(\.description).joined(separator: "; ")
        let more = issues.count > 3 ? " (and \(issues.count - 3) more)" : ""
        return APIError(.validationFailed, "the workflow is invalid: \(summary)\(more)",
                        details: .array(issues.map(\.jsonValue)))
    }
}
