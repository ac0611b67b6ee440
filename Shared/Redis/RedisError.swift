/// What went wrong talking to Redis. The `code` is stable; `message` never contains a password.
///
/// `server` errors carry Redis's own error text (e.g. `BUSYGROUP Consumer Group name already exists`);
/// `serverErrorPrefix` is its first word, for matching (`BUSYGROUP`, `NOGROUP`, `NOSCRIPT`, `WRONGTYPE`).
public struct RedisError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Extensible error code (a struct, not an enum, so new codes are not a breaking change).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Could not connect, or the connection broke (reset, EOF). The connection reconnects on next use.
        public static let connection = Code(rawValue: "redis_connection")
        /// The socket timeout passed before Redis answered. The connection is discarded.
        public static let timeout = Code(rawValue: "redis_timeout")
        /// Redis answered with an error reply; `message` is its text.
        public static let server = Code(rawValue: "redis_server_error")
        /// A protocol error, or a reply of a shape the caller did not expect.
        public static let unexpectedReply = Code(rawValue: "redis_unexpected_reply")
        /// The configuration (URL) is invalid.
        public static let configuration = Code(rawValue: "redis_configuration")
        /// The client or connection was closed.
        public static let closed = Code(rawValue: "redis_closed")
        /// The task was cancelled while it waited for a pooled connection (nothing was sent).
        public static let cancelled = Code(rawValue: "redis_cancelled")

        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The first word of a server error (`BUSYGROUP`, `NOGROUP`, `NOSCRIPT`, `ERR`...), nil otherwise.
    public var serverErrorPrefix: String? {
        guard code == .server else { return nil }
        return message.split(separator: " ", maxSplits: 1).first.map(String.init)
    }

    public var description: String { "\(code.rawValue): \(message)" }

    static func unexpected(_ what: String, _ value: RedisValue) -> RedisError {
        RedisError(.unexpectedReply, "\(what): unexpected reply \(value.shortDescription)")
    }
}
