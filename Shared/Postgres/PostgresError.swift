/// A statement or connection failure, with the server's SQLSTATE.
///
/// `code` is the stable part to branch on (`.uniqueViolation`, `.syntaxError`, ...). Connection-level
/// failures carry a class `08` code (`.unableToConnect`, `.connectionFailure`,
/// `.connectionDoesNotExist` when the client is shut down) or a `57P0x` shutdown code, and
/// `isConnectionError` is true for them. The message is the server's (or libpq's) primary message
/// and never contains the connection password.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public var code: SQLState
    public var message: String
    public var detail: String?
    public var hint: String?
    public var schema: String?
    public var table: String?
    public var column: String?
    public var constraint: String?

    public init(code: SQLState, message: String, detail: String? = nil, hint: String? = nil) {
        self.code = code
        self.message = message
        self.detail = detail
        self.hint = hint
    }

    /// True when the connection, not the statement, failed: the pool discards and reopens it.
    public var isConnectionError: Bool {
        code.errorClass == "08" || code == .adminShutdown || code == .crashShutdown || code == .cannotConnectNow
    }

    public var description: String {
        var text = "PostgresError(\(code.rawValue)): \(message)"
        if let detail { text += " (detail: \(detail))" }
        if let constraint { text += " [constraint \(constraint)]" }
        return text
    }

    static func connectionClosed(_ what: String = "the Postgres client is shut down") -> PostgresError {
        PostgresError(code: .connectionDoesNotExist, message: what)
    }
}

/// A column value that could not be turned into the Swift type asked for.
public struct PostgresDecodingError: Error, Sendable, CustomStringConvertible {
    /// Stable reason codes.
    public struct Code: RawRepresentable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let unexpectedNull = Code(rawValue: "unexpected_null")
        public static let typeMismatch = Code(rawValue: "type_mismatch")
        public static let columnNotFound = Code(rawValue: "column_not_found")
        public static let columnOutOfRange = Code(rawValue: "column_out_of_range")
    }

    public var code: Code
    /// The Swift type asked for.
    public var targetType: String
    public var column: String?
    public var columnIndex: Int?
    /// The column's Postgres type OID, 0 if unknown.
    public var postgresType: UInt32

    public init(
        code: Code, targetType: String, column: String? = nil, columnIndex: Int? = nil, postgresType: UInt32 = 0
    ) {
        self.code = code
        self.targetType = targetType
        self.column = column
        self.columnIndex = columnIndex
        self.postgresType = postgresType
    }

    /// The error a decoder throws; the row fills in the column.
    public static func typeMismatch<T>(_ type: T.Type) -> PostgresDecodingError {
        PostgresDecodingError(code: .typeMismatch, targetType: String(describing: type))
    }

    public var description: String {
        "PostgresDecodingError(\(code.rawValue)): cannot decode column \(column ?? "?") (#\(columnIndex.map(String.init) ?? "?"), type oid \(postgresType)) as \(targetType)"
    }
}
