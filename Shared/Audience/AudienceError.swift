import BuzzKitWire

/// Why an expression was refused, and where: 1-based `line` and `column` (in Unicode scalars) of
/// the offending token. The API reports it as `validation_failed` (see `apiError(field:)`).
public struct AudienceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable, extensible error codes.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// The text does not follow the grammar (the message says what was expected).
        public static let syntaxError = Code(rawValue: "syntax_error")
        /// A well-formed construct that can never be meaningful: `"pro" < true`, a bad duration,
        /// `createdAt` compared with something that is not a date-time.
        public static let invalidValue = Code(rawValue: "invalid_value")
        /// Length, depth, number of conditions, event clauses or list items over `AudienceLimits`.
        public static let limitExceeded = Code(rawValue: "limit_exceeded")
    }

    public var code: Code
    /// Human-readable, without the position (see `description` for both).
    public var message: String
    public var line: Int
    public var column: Int
    /// What the parser expected at that position ("a value", "')'"...), when it was a syntax error.
    public var expected: String?

    public init(_ code: Code, _ message: String, line: Int, column: Int, expected: String? = nil) {
        self.code = code
        self.message = message
        self.line = line
        self.column = column
        self.expected = expected
    }

    public var description: String { "line \(line), column \(column): \(message)" }

    /// The issue at `path` (the request member that held the expression): `message`, `code`,
    /// `line`, `column` and `expected` when known.
    public func issue(path: String = "where") -> ValidationIssue {
        ValidationIssue(
            path: path, message: message, line: line, column: column, code: code.rawValue, expected: expected)
    }

    /// `validation_failed` with `details: [{path, message, code, line, column, expected?}]` (the
    /// gateway's `{path, message}` shape plus the position): `issue(path: field)`.
    public func apiError(field: String = "where") -> APIError {
        ValidationIssue.apiError([issue(path: field)], message: "\(field): \(description)")
    }
}
