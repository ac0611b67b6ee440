/// An error as the API reports it: a stable code, a human message and optional details.
///
/// Handlers throw or return this; the HTTP layer turns it into the envelope's `error` member with
/// the code's status. `details` carries machine-readable specifics, e.g. one entry per invalid field.
public struct APIError: Error, Sendable, Equatable {
    public var code: ErrorCode
    public var message: String
    public var details: JSONValue?

    public init(_ code: ErrorCode, _ message: String, details: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }
}

extension APIError {
    public static func notFound(_ what: String) -> APIError { APIError(.notFound, "\(what) was not found") }
    public static func invalidJSON(_ reason: String) -> APIError {
        APIError(.invalidJSON, "the request body is not valid JSON: \(reason)")
    }
    public static func payloadTooLarge(limit: Int) -> APIError {
        APIError(
            .payloadTooLarge, "the request body exceeds \(limit) bytes", details: ["limitBytes": .int(Int64(limit))])
    }
    public static let internalError = APIError(.internalError, "an internal error occurred")
}
