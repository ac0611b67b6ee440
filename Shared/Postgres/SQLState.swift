/// A five-character SQLSTATE code as PostgreSQL reports it (`23505`), with the well-known ones named.
///
/// A struct, not an enum: the server knows hundreds of codes and new ones appear; compare against the
/// statics (`error.code == .uniqueViolation`) or look at `errorClass` (`"23"`: integrity constraint).
/// Failures that happen on the client side (cannot connect, connection lost) use class `08` codes.
public struct SQLState: RawRepresentable, Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    /// The first two characters: the class (`08` connection, `23` integrity, `42` syntax/access, ...).
    public var errorClass: String { String(rawValue.prefix(2)) }

    // MARK: - Connection (client side and server side)
    public static let connectionException: SQLState = "08000"
    /// The client could not open a connection.
    public static let unableToConnect: SQLState = "08001"
    /// The client or the pool is closed.
    public static let connectionDoesNotExist: SQLState = "08003"
    /// The connection broke (server restart, network) while in use.
    public static let connectionFailure: SQLState = "08006"
    public static let protocolViolation: SQLState = "08P01"
    public static let adminShutdown: SQLState = "57P01"
    public static let crashShutdown: SQLState = "57P02"
    public static let cannotConnectNow: SQLState = "57P03"

    // MARK: - Integrity
    public static let notNullViolation: SQLState = "23502"
    public static let foreignKeyViolation: SQLState = "23503"
    public static let uniqueViolation: SQLState = "23505"
    public static let checkViolation: SQLState = "23514"
    public static let exclusionViolation: SQLState = "23P01"

    // MARK: - Data
    public static let dataException: SQLState = "22000"
    public static let numericValueOutOfRange: SQLState = "22003"
    public static let invalidDatetimeFormat: SQLState = "22007"
    public static let divisionByZero: SQLState = "22012"
    public static let invalidTextRepresentation: SQLState = "22P02"
    public static let invalidJSONText: SQLState = "22P02"

    // MARK: - Syntax and access
    public static let syntaxError: SQLState = "42601"
    public static let insufficientPrivilege: SQLState = "42501"
    public static let undefinedColumn: SQLState = "42703"
    public static let undefinedFunction: SQLState = "42883"
    public static let undefinedTable: SQLState = "42P01"
    public static let duplicateTable: SQLState = "42P07"
    public static let duplicateObject: SQLState = "42710"

    // MARK: - Transactions and locks
    public static let serializationFailure: SQLState = "40001"
    public static let deadlockDetected: SQLState = "40P01"
    public static let inFailedTransaction: SQLState = "25P02"
    public static let lockNotAvailable: SQLState = "55P03"
    public static let queryCanceled: SQLState = "57014"

    // MARK: - Auth
    public static let invalidAuthorization: SQLState = "28000"
    public static let invalidPassword: SQLState = "28P01"
}
