import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

extension Gateway {
    /// The steps every keyed route goes through, in order: authenticate (401), rate limit (429),
    /// scope (403 forbidden_scope), tenant (400/403/404), a client key's installation (401
    /// installation_required / unauthorized), Idempotency-Key on POST, the handler.
    /// Every answer carries the `RateLimit-*` headers once the key is known.
    func handle(_ route: GatewayRoute, _ request: Request) async -> Response {
        var rateHeaders = HTTPHeaders()
        do {
            let key = try await authenticator.authenticate(authorization: request.headers["Authorization"])
            if configuration.rateLimit.enabled {
                let decision = await rateLimiter.acquire(key.id)
                // A fresh header list: `add` (no search for an existing field).
                rateHeaders.add("RateLimit-Limit", String(decision.limit))
                rateHeaders.add("RateLimit-Remaining", String(decision.remaining))
                rateHeaders.add("RateLimit-Reset", String(decision.resetSeconds))
                if !decision.allowed {
                    rateHeaders.add("Retry-After", String(decision.retryAfterSeconds))
                    return .error(APIError(.rateLimited, "too many requests for this API key; retry after \(decision.retryAfterSeconds) s",
                                           details: ["limit": .int(Int64(decision.limit)),
                                                     "retryAfterSeconds": .int(Int64(decision.retryAfterSeconds))]),
                                  headers: rateHeaders)
                }
            }
            try authorize(route, key)
            var context = RequestContext(request: request, key: key, tenantID: nil)
            if route.actsOnTenant {
                let tenant = try await tenants.resolve(key: key, header: request.headers[TenantResolver.header])
                context.tenantID = tenant
                if key.kind == .client && route.needsInstallation {
                    context.installation = try await installations.authenticate(
                        header: request.headers[InstallationToken.header], tenantID: tenant)
                }
            }
            var response = try await run(route, context)
            if response.headers.count == 0 {
                response.headers = rateHeaders
            } else {
                for field in rateHeaders { response.headers.set(field.name, field.value) }
            }
            return response
        } catch let error as APIError {
            return .error(error, headers: rateHeaders)
        } catch {
            logger.error("request failed", metadata: ["request.id": request.requestId, "route": route.routerPattern,
                                                      "error": "\(error)"])
            return .error(.internalError, headers: rateHeaders)
        }
    }

    /// 403 `forbidden_scope` naming the scope the route needs.
    func authorize(_ route: GatewayRoute, _ key: APIKeyRecord) throws(APIError) {
        guard let scope = route.scope else { return }
        if case .tenant(_, clientKeys: true) = route.access, key.kind == .client { return }
        guard key.kind != .client || Scope.clientScopes.contains(scope), key.scopes.contains(scope) else {
            throw APIError(.forbiddenScope, "this API key lacks the scope \(scope.rawValue)",
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
