import BuzzKitWire

/// Why a preferences call failed, or why a queued change was dropped.
///
/// `code` is one of the SDK's stable codes below (more may be added); `apiCode` is the server's
/// own error code when the server answered (`forbidden_subscriber`, `forbidden_installation`,
/// `validation_failed`, `not_found`, ...).
public struct PreferencesError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// No `identify` yet: preferences belong to an identified subscriber.
        public static let notIdentified = Code(rawValue: "not_identified")
        /// `identify` was called without a signature: the server lets a client key act for a
        /// subscriber only with the signature the tenant's backend made for it.
        public static let signatureRequired = Code(rawValue: "signature_required")
        /// 403: the signature is not this subscriber's under the tenant's identity secret (or the
        /// tenant has none), or this installation is not identified as the subscriber. A change
        /// refused so is dropped, never retried.
        public static let forbidden = Code(rawValue: "forbidden")
        /// Another 4xx (422 for a category the tenant does not have, 404 for an unknown
        /// subscriber): the change is dropped, never retried.
        public static let rejected = Code(rawValue: "rejected")
        /// The SDK refused the change before storing it (no member, or a key that cannot be a
        /// category key).
        public static let invalidChange = Code(rawValue: "invalid_change")
        /// No answer, or a 5xx/408/429 (reading only: a change stays queued instead).
        public static let unavailable = Code(rawValue: "unavailable")
        /// A queued change failed `maxAttempts` times in a row for lack of a network and was given up.
        public static let gaveUp = Code(rawValue: "gave_up")
        /// The SDK's storage failed.
        public static let storage = Code(rawValue: "storage")
    }

    public var code: Code
    /// The HTTP status, when the server answered.
    public var status: Int?
    /// The server's error code, when it sent one.
    public var apiCode: String?
    public var message: String

    public init(code: Code, status: Int? = nil, apiCode: String? = nil, message: String) {
        self.code = code
        self.status = status
        self.apiCode = apiCode
        self.message = message
    }

    public var description: String {
        "\(code.rawValue)\(status.map { " (\($0)\(apiCode.map { " \($0)" } ?? ""))" } ?? ""): \(message)"
    }

    /// The error for a refused request (4xx other than 408/429).
    static func refused(status: Int, _ error: APIError?) -> PreferencesError {
        PreferencesError(
            code: status == 403 ? .forbidden : .rejected, status: status, apiCode: error?.code.rawValue,
            message: error?.message ?? "the API refused the request")
    }
}
