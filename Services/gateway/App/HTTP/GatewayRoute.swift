import BuzzKitContracts
import BuzzKitHTTPServer
import BuzzKitWire

/// One row of the gateway's route table: everything the router, the request pipeline and the
/// OpenAPI document need to know about a route, in one place, so the document cannot drift from
/// what is served.
public struct GatewayRoute: Sendable {
    /// Who may call the route.
    public enum Access: Sendable, Equatable {
        /// Registered by the service runtime for every service (`/healthz`, `/readyz`, `/metrics`).
        case infrastructure
        /// No key needed (`/openapi.json`).
        case open
        /// Any valid key, of any kind, with no scope: the key describes itself (`GET /v1/key`).
        case anyKey
        /// Workspace administration: the key's workspace; the scope is only ever held by workspace keys.
        case workspace(Scope)
        /// Acts on one tenant (see `TenantResolver`). `clientKeys`: client (SDK) keys may call it
        /// whatever their scopes (device registration, identify).
        case tenant(Scope, clientKeys: Bool)
    }

    public typealias Handler = @Sendable (Gateway, RequestContext) async throws -> Response
    /// A handler that answers through `done` (once, from any thread) without a task per request,
    /// e.g. by queueing the request into a batch. Called on the network thread: it must not block.
    typealias DeferredHandler =
        @Sendable (Gateway, RequestContext, @escaping @Sendable (Result<Response, any Error>) -> Void) -> Void

    public var method: String
    /// OpenAPI path template: `/v1/subscribers/{id}`.
    public var path: String
    public var operationID: String
    public var summary: String
    public var access: Access
    /// JSON schema of the request body; nil when the route takes none.
    public var requestBody: JSONValue?
    /// Whether the body may be omitted entirely.
    public var requestBodyOptional: Bool
    /// The route's own query parameters (pagination's `cursor` and `limit` are added by `paginated`).
    public var query: [QueryParameter]
    /// The route's own request headers (the pipeline's, such as `BuzzKit-Tenant`, are added by the
    /// document).
    public var headers: [QueryParameter]
    /// JSON schema of the envelope's `data` on success (the item schema for lists).
    public var response: JSONValue
    public var successStatus: Int
    /// Other success statuses the route answers with the same `data` (`202` when the work goes on
    /// in the background).
    public var otherStatuses: [Int] = []
    /// A keyset-paginated list (`cursor`, `limit`; `metadata.cursor`, `metadata.hasMore`).
    public var paginated: Bool
    /// Route-specific error codes (the pipeline's own, such as 401 and 429, are added by `errorCodes`).
    public var errors: [ErrorCode]
    /// The rule of each path parameter (`{id}`, `{token}`, `{key}`): the document states it and the
    /// handler checks the parameter with it (a test holds every `{name}` of the path to one).
    public var pathRules: [String: TextRule]
    /// The route that registers an installation (`POST /v1/installations`): client keys call it
    /// without the `BuzzKit-Installation` header every other client-key request must carry.
    public var registersInstallation = false
    var handler: Handler?
    /// When set, requests whose key, rate limit and tenant are decided from caches run this
    /// instead of `handler`; on POST only those without an `Idempotency-Key` (its claim is async).
    var deferred: DeferredHandler?

    init(
        _ method: String, _ path: String, id operationID: String, _ summary: String, access: Access,
        path pathRules: [String: TextRule] = [:], body: JSONValue? = nil, bodyOptional: Bool = false,
        query: [QueryParameter] = [], headers: [QueryParameter] = [], response: JSONValue, status: Int = 200,
        otherStatuses: [Int] = [], paginated: Bool = false, errors: [ErrorCode] = [], handler: Handler?,
        deferred: DeferredHandler? = nil
    ) {
        self.otherStatuses = otherStatuses
        self.pathRules = pathRules
        self.method = method
        self.path = path
        self.operationID = operationID
        self.summary = summary
        self.access = access
        self.requestBody = body
        self.requestBodyOptional = bodyOptional
        self.query = query
        self.headers = headers
        self.response = response
        self.successStatus = status
        self.paginated = paginated
        self.errors = errors
        self.handler = handler
        self.deferred = deferred
    }

    /// The router pattern: `{name}` segments become `:name`.
    public var routerPattern: String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix("{") && segment.hasSuffix("}") ? ":" + segment.dropFirst().dropLast() : segment
        }.joined(separator: "/")
    }

    /// The path parameters' names, in order.
    public var pathParameters: [String] {
        path.split(separator: "/").filter { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) }
    }

    public var scope: Scope? {
        switch access {
        case .workspace(let scope), .tenant(let scope, _): scope
        case .infrastructure, .open, .anyKey: nil
        }
    }

    public var needsKey: Bool { scope != nil || access == .anyKey }
    /// Client (SDK) keys may call it.
    public var allowsClientKeys: Bool { if case .tenant(_, clientKeys: true) = access { true } else { false } }
    /// A client key must name its installation (`BuzzKit-Installation`) on this route.
    public var needsInstallation: Bool { allowsClientKeys && !registersInstallation }
    public var actsOnTenant: Bool { if case .tenant = access { true } else { false } }

    /// Every error code the route can answer, with what the pipeline adds.
    public var errorCodes: [ErrorCode] {
        var codes: [ErrorCode] = []
        if needsKey {
            codes += scope == nil ? [.unauthorized, .rateLimited] : [.unauthorized, .forbiddenScope, .rateLimited]
        }
        if actsOnTenant { codes += [.tenantRequired, .forbiddenTenant, .tenantNotFound] }
        if needsInstallation { codes += [.installationRequired, .forbiddenInstallation] }
        if requestBody != nil { codes += [.invalidJSON, .payloadTooLarge] }
        if requestBody != nil || paginated || !pathParameters.isEmpty || !query.isEmpty {
            codes.append(.validationFailed)
        }
        // A path parameter that is an id (a UUID) of something: anything else names nothing.
        if pathRules.values.contains(where: { $0.format == "uuid" }) && !errors.contains(.tenantNotFound) {
            codes.append(.notFound)
        }
        if method == "POST" && needsKey { codes += [.idempotencyKeyReused, .conflict] }
        codes += errors
        if access == .infrastructure && path == "/readyz" { codes.append(.notReady) }
        codes.append(.internalError)
        var seen = Set<String>()
        return codes.filter { seen.insert($0.rawValue).inserted }
    }
}

/// A query parameter (or a header) of a route, as the OpenAPI document describes it.
public struct QueryParameter: Sendable {
    public var name: String
    public var description: String
    /// JSON schema of the value (a string, an enum, an integer with bounds).
    public var schema: JSONValue

    init(_ name: String, _ description: String, schema: JSONValue) {
        self.name = name
        self.description = description
        self.schema = schema
    }
}
