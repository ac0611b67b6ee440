/// One thing wrong with a request: where (`title`, `actions[2].id`, `steps[2].waitUntil.time`,
/// `where`) and why, plus what locates it further when that is known.
///
/// The one shape every validator reports (the gateway's request fields, push content, event
/// batches, audience expressions, workflow definitions): validation collects every problem rather
/// than stopping at the first, so a caller fixes a request in one round, and the API answers them
/// as the `details` of `422 validation_failed`.
///
/// `jsonValue` is `{"path", "message"}` plus each extra that is set (`index`, `line`, `column`,
/// `code`, `expected`); an extra that is nil is left out.
public struct ValidationIssue: Sendable, Hashable, CustomStringConvertible {
    /// The member's path in the request: `title`, `action.name`, `to[3]`, `data.messageId`, `limit`,
    /// `path.id` for a path parameter, `body` for the body as a whole, `payload` for the encoded size.
    public var path: String
    /// What is wrong, in words.
    public var message: String
    /// The event's position in a batch's `events` (nil for the batch itself and outside batches).
    public var index: Int?
    /// 1-based line and column (in Unicode scalars) in an expression's text.
    public var line: Int?
    public var column: Int?
    /// A finer, stable snake_case reason where the validator has one (an expression's
    /// `syntax_error`, `invalid_value`, `limit_exceeded`).
    public var code: String?
    /// What a parser expected at `line`/`column` ("a value", "')'").
    public var expected: String?

    public init(
        path: String, message: String, index: Int? = nil, line: Int? = nil, column: Int? = nil,
        code: String? = nil, expected: String? = nil
    ) {
        self.path = path
        self.message = message
        self.index = index
        self.line = line
        self.column = column
        self.code = code
        self.expected = expected
    }

    /// `{"path": "...", "message": "..."}` and the extras that are set.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["path": .string(path), "message": .string(message)]
        if let index { object["index"] = .int(Int64(index)) }
        if let line { object["line"] = .int(Int64(line)) }
        if let column { object["column"] = .int(Int64(column)) }
        if let code { object["code"] = .string(code) }
        if let expected { object["expected"] = .string(expected) }
        return .object(object)
    }

    /// `path: message`.
    public var description: String { "\(path): \(message)" }
}

extension ValidationIssue {
    /// `422 validation_failed` with `details` one `jsonValue` per issue, in order, and `message`
    /// as the error's message.
    public static func apiError(_ issues: [ValidationIssue], message: String) -> APIError {
        APIError(.validationFailed, message, details: .array(issues.map(\.jsonValue)))
    }
}
