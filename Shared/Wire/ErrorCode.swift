/// A stable, snake_case error code as it appears in the envelope's `error.code`.
///
/// The list is open (a struct, not an enum) so later features add codes without breaking callers;
/// every code the API can answer is declared here once, with its HTTP status, and the OpenAPI
/// document and README are generated from or checked against `ErrorCode.all`.
public struct ErrorCode: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    /// The HTTP status this code is answered with.
    public let httpStatus: Int

    public init(_ rawValue: String, httpStatus: Int) {
        self.rawValue = rawValue
        self.httpStatus = httpStatus
    }

    public var description: String { rawValue }

    public static func == (lhs: ErrorCode, rhs: ErrorCode) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}

extension ErrorCode {
    public static let invalidJSON = ErrorCode("invalid_json", httpStatus: 400)
    public static let badRequest = ErrorCode("bad_request", httpStatus: 400)
    public static let tenantRequired = ErrorCode("tenant_required", httpStatus: 400)
    public static let unauthorized = ErrorCode("unauthorized", httpStatus: 401)
    public static let forbiddenScope = ErrorCode("forbidden_scope", httpStatus: 403)
    public static let forbiddenTenant = ErrorCode("forbidden_tenant", httpStatus: 403)
    public static let notFound = ErrorCode("not_found", httpStatus: 404)
    public static let tenantNotFound = ErrorCode("tenant_not_found", httpStatus: 404)
    public static let methodNotAllowed = ErrorCode("method_not_allowed", httpStatus: 405)
    public static let conflict = ErrorCode("conflict", httpStatus: 409)
    public static let idempotencyKeyReused = ErrorCode("idempotency_key_reused", httpStatus: 409)
    public static let payloadTooLarge = ErrorCode("payload_too_large", httpStatus: 413)
    public static let unsupportedMediaType = ErrorCode("unsupported_media_type", httpStatus: 415)
    public static let validationFailed = ErrorCode("validation_failed", httpStatus: 422)
    public static let rateLimited = ErrorCode("rate_limited", httpStatus: 429)
    public static let internalError = ErrorCode("internal_error", httpStatus: 500)
    public static let notReady = ErrorCode("not_ready", httpStatus: 503)
    public static let upstreamTimeout = ErrorCode("upstream_timeout", httpStatus: 504)

    /// Every code the API answers, in one list.
    public static let all: [ErrorCode] = [
        .invalidJSON, .badRequest, .tenantRequired, .unauthorized, .forbiddenScope, .forbiddenTenant,
        .notFound, .tenantNotFound, .methodNotAllowed, .conflict, .idempotencyKeyReused,
        .payloadTooLarge, .unsupportedMediaType, .validationFailed, .rateLimited, .internalError,
        .notReady, .upstreamTimeout,
    ]
}
