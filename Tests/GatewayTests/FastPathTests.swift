import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// Requests whose key, rate-limit tokens and tenant are cached are decided on the network thread
/// (the hot subscriber routes then join their batch without a task): the answers must be the same
/// as the full pipeline's, headers included.
@Suite("Gateway cached fast path", .requiresTestStack)
struct FastPathTests {
    /// Tokens leased from Redis several at a time are spent locally: the hot routes still carry
    /// the RateLimit-* headers, `Remaining` counts down to 0, and the burst still ends in a 429.
    @Test func hotRoutesCountDownAndStopAtTheBurst() async throws {
        let limit = RateLimitConfiguration(
            requestsPerSecond: 0.001, burst: 6, leaseSize: 3, keyPrefix: "bk:test:\(UUID().uuidString):")
        try await withGateway(rateLimit: limit) { h in
            var remaining: [Int] = []
            var limited: Reply?
            for n in 0..<30 {
                let reply =
                    n.isMultiple(of: 2)
                    ? try await h.send("GET", "/v1/subscribers/fast-\(n)", key: h.tenantKey)
                    : try await h.send(
                        "PUT", "/v1/subscribers/fast-\(n)", key: h.tenantKey,
                        body: ["attributes": ["n": .int(Int64(n))]])
                #expect(reply.headers["RateLimit-Limit"] == "6")
                #expect(reply.headers["RateLimit-Reset"] != nil)
                let left = try #require(Int(reply.headers["RateLimit-Remaining"] ?? ""))
                if reply.status == 429 {
                    limited = reply
                    break
                }
                #expect(reply.status == (n.isMultiple(of: 2) ? 404 : 201), "request \(n): \(reply.status)")
                remaining.append(left)
            }
            let reply = try #require(limited)
            #expect(reply.code == "rate_limited")
            #expect(Int(reply.headers["Retry-After"] ?? "") ?? 0 >= 1)
            #expect(remaining.count == 6)  // the whole burst was served, and nothing refills at 0.001/s
            #expect(remaining.first == 5)
            #expect(remaining.min() == 0)
        }
    }

    /// Refusals decided from the cache (unknown key, missing scope, another tenant) are envelopes;
    /// once the key is known they carry the RateLimit-* headers.
    @Test func cachedRefusalsAreEnvelopesWithRateLimitHeaders() async throws {
        try await withGateway { h in
            for _ in 0..<3 {  // the first request fills the caches, the next ones are decided from them
                let scope = try await h.send("GET", "/v1/subscribers/anyone", key: h.clientKey)
                #expect(scope.status == 403 && scope.code == "forbidden_scope")
                #expect(scope.envelope.error?.details?["scope"] == "subscribers:read")
                #expect(scope.headers["RateLimit-Limit"] != nil && scope.headers["RateLimit-Remaining"] != nil)

                let tenant = try await h.send(
                    "GET", "/v1/subscribers/anyone", key: h.tenantKey, tenant: UUID().uuidString)
                #expect(tenant.status == 403 && tenant.code == "forbidden_tenant")
                #expect(tenant.headers["RateLimit-Limit"] != nil)

                let unknown = try await h.send(
                    "GET", "/v1/subscribers/anyone", key: "bk_tk_" + String(repeating: "A", count: 43))
                #expect(unknown.status == 401 && unknown.code == "unauthorized")
                #expect(unknown.envelope.metadata["requestId"]?.stringValue?.isEmpty == false)
            }
        }
    }

    /// A workspace key's tenant is looked up once, then served from the cache: both answers agree,
    /// and a tenant of no workspace stays 404 either way.
    @Test func workspaceKeysTenantFromTheCacheAgrees() async throws {
        try await withGateway { h in
            #expect(
                try await h.send("PUT", "/v1/subscribers/ws-user", key: h.workspaceKey, tenant: h.tenantID).status
                    == 201)
            for _ in 0..<3 {
                let reply = try await h.send("GET", "/v1/subscribers/ws-user", key: h.workspaceKey, tenant: h.tenantID)
                #expect(reply.status == 200 && reply.data?["id"] == "ws-user")
                let missing = try await h.send(
                    "GET", "/v1/subscribers/ws-user", key: h.workspaceKey, tenant: UUID().uuidString)
                #expect(missing.status == 404 && missing.code == "tenant_not_found")
                let none = try await h.send("GET", "/v1/subscribers/ws-user", key: h.workspaceKey)
                #expect(none.status == 400 && none.code == "tenant_required")
            }
        }
    }
}
