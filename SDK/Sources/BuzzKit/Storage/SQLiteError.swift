/// A SQLite failure: the result code and SQLite's message.
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Int32
    public var message: String

    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "sqlite error \(code): \(message)" }
}
