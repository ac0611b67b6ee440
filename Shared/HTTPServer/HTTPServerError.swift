/// Why the server could not start (or was used in the wrong state).
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The configuration is unusable (host not an IPv4 address, port out of range, ...).
        public static let invalidConfiguration = Code("invalid_configuration")
        /// libmicrohttpd did not start: usually the port is taken.
        public static let startFailed = Code("start_failed")
        /// `start()` was called twice, or after `shutdown()`.
        public static let invalidState = Code("invalid_state")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
