/// A failure in a cryptographic operation. Messages never contain key material.
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidKey = Code("invalid_key")
        public static let invalidInput = Code("invalid_input")
        public static let authenticationFailed = Code("authentication_failed")
        public static let libraryFailure = Code("library_failure")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
