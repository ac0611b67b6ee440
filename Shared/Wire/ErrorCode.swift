/// A stable, snake_case error code as it appears in the envelope's `error.code`.
///
/// The list is open (a struct, not an enum) so later features add codes without breaking callers;
/// every code the API can answer is declared here once, with its HTTP status, and listed in
/// `ErrorCode.all`: the OpenAPI document is generated from that list and a test holds it equal
/// to the document and to the error-code table of docs/api.md. A new code goes here, into `all`,
/// and into that table.
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
    // MARK: - Requests and keys

    /// The body is not JSON (400).
    public static let invalidJSON = ErrorCode("invalid_json", httpStatus: 400)
    /// A workspace key without the `BuzzKit-Tenant` header (400).
    public static let tenantRequired = ErrorCode("tenant_required", httpStatus: 400)
    /// No key, an unknown or a revoked key or installation token (401).
    public static let unauthorized = ErrorCode("unauthorized", httpStatus: 401)
    /// A client-key request without the `BuzzKit-Installation` header (401): register first with
    /// `POST /v1/installations`.
    public static let installationRequired = ErrorCode("installation_required", httpStatus: 401)
    /// The key lacks the route's scope (403; `details.scope`).
    public static let forbiddenScope = ErrorCode("forbidden_scope", httpStatus: 403)
    /// A tenant key naming another tenant (403).
    public static let forbiddenTenant = ErrorCode("forbidden_tenant", httpStatus: 403)
    /// A client (SDK) key acting for an identity that is not its installation's (403): events,
    /// devices and identify share this code.
    public static let forbiddenInstallation = ErrorCode("forbidden_installation", httpStatus: 403)
    /// Unknown route or resource (404).
    public static let notFound = ErrorCode("not_found", httpStatus: 404)
    /// Unknown tenant, or another workspace's (404).
    public static let tenantNotFound = ErrorCode("tenant_not_found", httpStatus: 404)
    /// Known route, other method (405, `Allow` header).
    public static let methodNotAllowed = ErrorCode("method_not_allowed", httpStatus: 405)
    /// `POST /v1/installations` for an anonymous id that already has an installation (409).
    public static let installationExists = ErrorCode("installation_exists", httpStatus: 409)
    /// A request with this `Idempotency-Key` is still running (409).
    public static let conflict = ErrorCode("conflict", httpStatus: 409)
    /// The `Idempotency-Key` came with another body (409).
    public static let idempotencyKeyReused = ErrorCode("idempotency_key_reused", httpStatus: 409)
    /// `POST /v1/workflows/{key}/trigger` of a disabled workflow (409): enable it to start runs.
    public static let workflowDisabled = ErrorCode("workflow_disabled", httpStatus: 409)
    /// The body is over the server's limit (413; `details.limitBytes`).
    public static let payloadTooLarge = ErrorCode("payload_too_large", httpStatus: 413)
    /// Every problem of the request at once (422; `details` a list of `ValidationIssue`).
    public static let validationFailed = ErrorCode("validation_failed", httpStatus: 422)
    /// Too many requests for the key (429; `Retry-After` and `RateLimit-*` headers).
    public static let rateLimited = ErrorCode("rate_limited", httpStatus: 429)

    // MARK: - Events

    /// More than 100 events in one batch (422; distinct from `payload_too_large`, which is about bytes).
    /// `details`: `{"limit": 100, "count": n}`.
    public static let batchTooLarge = ErrorCode("batch_too_large", httpStatus: 422)
    /// The batch could not be queued (Redis unreachable). Nothing was accepted: retry (503).
    public static let ingestUnavailable = ErrorCode("ingest_unavailable", httpStatus: 503)

    // MARK: - Live Activities

    /// `POST /v1/live-activities/send` update or end: nothing registered for that activity of
    /// that subscriber (404).
    public static let liveActivityNotFound = ErrorCode("live_activity_not_found", httpStatus: 404)
    /// `POST /v1/live-activities/send` start: the subscriber has no usable push-to-start token of
    /// that attributes type (404: like `live_activity_not_found`, the request names something
    /// that is not there, which no schema can state).
    public static let noPushToStartToken = ErrorCode("no_push_to_start_token", httpStatus: 404)

    // MARK: - The send policy

    /// `DELETE /v1/categories/{key}` of a category an enabled workflow sends in, that is the
    /// tenant's default category or that a frequency cap counts (409; `details.usedBy` says where).
    public static let categoryInUse = ErrorCode("category_in_use", httpStatus: 409)
    /// A client (SDK) key reading or changing a subscriber's preferences without a valid
    /// `BuzzKit-Subscriber-Signature` for that subscriber (the HMAC-SHA256 of the subscriber id
    /// with the tenant's identity secret), or identifying with a signature that is not valid (403).
    public static let forbiddenSubscriber = ErrorCode("forbidden_subscriber", httpStatus: 403)

    // MARK: - The server

    /// A bug; the message leaks nothing, the log has the request id (500).
    public static let internalError = ErrorCode("internal_error", httpStatus: 500)
    /// `/readyz` while a dependency is down or the service drains (503).
    public static let notReady = ErrorCode("not_ready", httpStatus: 503)
    /// A handler passed its deadline (504).
    public static let upstreamTimeout = ErrorCode("upstream_timeout", httpStatus: 504)

    /// Every code the API answers, in one list (the OpenAPI document's `ErrorCode` enum, in this
    /// order).
    public static let all: [ErrorCode] = [
        .invalidJSON, .tenantRequired, .unauthorized, .installationRequired, .forbiddenScope, .forbiddenTenant,
        .forbiddenInstallation, .notFound, .tenantNotFound, .methodNotAllowed, .installationExists, .conflict,
        .idempotencyKeyReused, .payloadTooLarge, .validationFailed, .rateLimited, .batchTooLarge, .ingestUnavailable,
        .liveActivityNotFound, .noPushToStartToken, .internalError, .notReady, .upstreamTimeout, .workflowDisabled,
        .categoryInUse, .forbiddenSubscriber
    ]
}
