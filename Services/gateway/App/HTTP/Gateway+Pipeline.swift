import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// A route of the table, boxed once at registration so each request's closures capture one
/// reference instead of copying the whole row.
final class RouteBox: Sendable {
    let route: GatewayRoute
    init(_ route: GatewayRoute) { self.route = route }
}

extension Gateway {
    /// The steps every keyed route goes through, in order: authenticate (401), rate limit (429),
    /// scope (403 forbidden_scope), tenant (400/403/404), a client key's installation (401
    /// installation_required / unauthorized), Idempotency-Key on POST, the handler.
    /// Every answer carries the `RateLimit-*` headers once the key is known.
    ///
    /// Decided on the network thread as far as the caches allow (`prelude`): a refusal is answered
    /// at once, a route with a deferred handler (the hot subscriber reads and writes) joins its
    /// batch with no task of its own, any other route runs as a task. What needs I/O before the
    /// handler (a key, tenant or installation not cached, a new rate-limit lease) continues as a
    /// task from the step the prelude reached, so no step runs twice.
    func answer(_ box: RouteBox, _ request: Request) -> Answer {
        switch prelude(box.route, request) {
        case .answered(let response):
            return .now(response)
        case .slow(let key, let rateHeaders):
            return .task { [self] request in await handle(box.route, request, key: key, rateHeaders: rateHeaders) }
        case .ready(let context, let rateHeaders):
            if let deferred = box.route.deferred,
                box.route.method != "POST" || request.headers[Idempotency.header] == nil
            {
                // The completion keeps the request id, not the request: the request is freed on
                // the network thread that built it, not later on the thread that answers.
                let requestId = context.request.requestId
                return .deferred { [self] responder in
                    deferred(self, context) { result in
                        responder.respond(
                            self.finish(result, box.route, requestId: requestId, rateHeaders: rateHeaders))
                    }
                }
            }
            return .task { [self] _ in
                do {
                    return finish(
                        .success(try await run(box.route, context)), box.route,
                        requestId: context.request.requestId, rateHeaders: rateHeaders)
                } catch {
                    return finish(
                        .failure(error), box.route, requestId: context.request.requestId, rateHeaders: rateHeaders)
                }
            }
        }
    }

    enum Prelude {
        case answered(Response)
        /// I/O needed; `key` and `rateHeaders` are set when those steps are done already.
        case slow(key: APIKeyRecord?, rateHeaders: HTTPHeaders?)
        case ready(RequestContext, rateHeaders: HTTPHeaders)
    }

    /// The pipeline's steps up to the handler, from the caches alone (no I/O, no suspension).
    func prelude(_ route: GatewayRoute, _ request: Request) -> Prelude {
        let key: APIKeyRecord
        switch authenticator.cached(authorization: request.headers["Authorization"]) {
        case .key(let found): key = found
        case .refused(let error): return .answered(.error(error))
        case .miss: return .slow(key: nil, rateHeaders: nil)
        }
        var rateHeaders = HTTPHeaders()
        if configuration.rateLimit.enabled {
            // Only the tokens leased already: a denial is decided by Redis, in `handle`.
            guard let decision = rateLimiter.acquireLocally(key.id) else { return .slow(key: key, rateHeaders: nil) }
            rateHeaders = Self.rateLimitHeaders(decision)
        }
        do {
            try authorize(route, key)
        } catch {
            return .answered(.error(error, headers: rateHeaders))
        }
        var context = RequestContext(request: request, key: key, tenantID: nil)
        if route.actsOnTenant {
            switch tenants.resolveCached(key: key, header: request.headers[TenantResolver.header]) {
            case .tenant(let tenant): context.tenantID = tenant
            case .refused(let error): return .answered(.error(error, headers: rateHeaders))
            case .miss: return .slow(key: key, rateHeaders: rateHeaders)
            }
            if let error = Self.malformedInstallation(route, request, key: key) {
                return .answered(.error(error, headers: rateHeaders))
            }
            if key.kind == .client && route.needsInstallation { return .slow(key: key, rateHeaders: rateHeaders) }
        }
        if route.requestBody != nil && JSONText.containsNUL(request.body) {
            return .answered(.error(JSONText.nulRefused, headers: rateHeaders))
        }
        return .ready(context, rateHeaders: rateHeaders)
    }

    /// The whole pipeline as a task. `key` and `rateHeaders` skip authentication and the rate
    /// limit when the prelude did them already.
    func handle(
        _ route: GatewayRoute, _ request: Request, key known: APIKeyRecord? = nil,
        rateHeaders knownHeaders: HTTPHeaders? = nil
    ) async -> Response {
        var rateHeaders = knownHeaders ?? HTTPHeaders()
        do {
            let key: APIKeyRecord
            if let known {
                key = known
            } else {
                key = try await authenticator.authenticate(authorization: request.headers["Authorization"])
            }
            if knownHeaders == nil, configuration.rateLimit.enabled {
                let decision = await rateLimiter.acquire(key.id)
                rateHeaders = Self.rateLimitHeaders(decision)
                if !decision.allowed {
                    return .error(
                        APIError(
                            .rateLimited,
                            "too many requests for this API key; retry after \(decision.retryAfterSeconds) s",
                            details: [
                                "limit": .int(Int64(decision.limit)),
                                "retryAfterSeconds": .int(Int64(decision.retryAfterSeconds))
                            ]),
                        headers: rateHeaders)
                }
            }
            try authorize(route, key)
            var context = RequestContext(request: request, key: key, tenantID: nil)
            if route.actsOnTenant {
                let tenant = try await tenants.resolve(key: key, header: request.headers[TenantResolver.header])
                context.tenantID = tenant
                if let error = Self.malformedInstallation(route, request, key: key) { throw error }
                if key.kind == .client && route.needsInstallation {
                    context.installation = try await installations.authenticate(
                        header: request.headers[InstallationToken.header], tenantID: tenant)
                }
            }
            if route.requestBody != nil && JSONText.containsNUL(request.body) { throw JSONText.nulRefused }
            return finish(
                .success(try await run(route, context)), route, requestId: request.requestId, rateHeaders: rateHeaders)
        } catch {
            return finish(.failure(error), route, requestId: request.requestId, rateHeaders: rateHeaders)
        }
    }

    /// A `BuzzKit-Installation` header that is present must have a token's shape on the routes
    /// that document it, whatever the key (`401 unauthorized`); server keys' requests never act
    /// for an installation, so a well-formed token is not looked up for them.
    static func malformedInstallation(_ route: GatewayRoute, _ request: Request, key: APIKeyRecord) -> APIError? {
        guard route.needsInstallation, let header = request.headers[InstallationToken.header] else { return nil }
        let token = HTTPHeaders.trimmingWhitespace(header)
        // A client key's empty header is installation_required: the authenticator says so.
        if token.isEmpty && key.kind == .client { return nil }
        return InstallationToken.isWellFormed(token) ? nil : InstallationAuthenticator.unknown
    }

    /// `RateLimit-Limit`, `-Remaining`, `-Reset`, and `Retry-After` on a denial.
    static func rateLimitHeaders(_ decision: RateLimiter.Decision) -> HTTPHeaders {
        // One array of the right size (appending one by one reallocated it twice per request).
        var fields: [HTTPHeaders.Field] = []
        fields.reserveCapacity(4)
        fields.append(HTTPHeaders.Field(name: "RateLimit-Limit", value: String(decision.limit)))
        fields.append(HTTPHeaders.Field(name: "RateLimit-Remaining", value: String(decision.remaining)))
        fields.append(HTTPHeaders.Field(name: "RateLimit-Reset", value: String(decision.resetSeconds)))
        if !decision.allowed {
            fields.append(HTTPHeaders.Field(name: "Retry-After", value: String(decision.retryAfterSeconds)))
        }
        return HTTPHeaders(fields: fields)
    }

    /// The handler's outcome as the response: its own headers plus the rate-limit headers; an
    /// `APIError` as its envelope, anything else logged and answered `500 internal_error`.
    func finish(
        _ result: Result<Response, any Error>, _ route: GatewayRoute, requestId: String,
        rateHeaders: HTTPHeaders
    ) -> Response {
        switch result {
        case .success(var response):
            if response.headers.count == 0 {
                response.headers = rateHeaders
            } else {
                for field in rateHeaders { response.headers.replaceOrAdd(name: field.name, value: field.value) }
            }
            return response
        case .failure(let error as APIError):
            return .error(error, headers: rateHeaders)
        case .failure(let error):
            logger.error(
                "request failed",
                metadata: [
                    "request.id": requestId, "route": route.routerPattern,
                    "error": "\(error)"
                ])
            return .error(.internalError, headers: rateHeaders)
        }
    }

    /// 403 `forbidden_scope` naming the scope the route needs.
    func authorize(_ route: GatewayRoute, _ key: APIKeyRecord) throws(APIError) {
        guard let scope = route.scope else { return }
        if case .tenant(_, clientKeys: true) = route.access, key.kind == .client { return }
        guard key.kind != .client || Scope.clientScopes.contains(scope), key.scopes.contains(scope) else {
            throw APIError(
                .forbiddenScope, "this API key lacks the scope \(scope.rawValue)",
                details: ["scope": .string(scope.rawValue)])
        }
    }

    /// The handler, wrapped in Idempotency-Key handling on POST.
    private func run(_ route: GatewayRoute, _ context: RequestContext) async throws -> Response {
        guard let handler = route.handler else { throw APIError.notFound("route") }
        guard route.method == "POST", let key = context.request.headers[Idempotency.header] else {
            return try await handler(self, context)
        }
        try Idempotency.validate(key)
        let scope = try context.tenantID ?? context.workspaceID
        switch try await idempotency.claim(scope: scope, key: key, request: context.request) {
        case .replay(let response):
            return response
        case .claimed:
            let response: Response
            do {
                response = try await handler(self, context)
            } catch let error as APIError {
                let failure = Response.error(error)
                await idempotency.complete(scope: scope, key: key, response: failure)
                throw error
            } catch {
                await idempotency.complete(scope: scope, key: key, response: nil)
                throw error
            }
            await idempotency.complete(scope: scope, key: key, response: response)
            return response
        }
    }
}
