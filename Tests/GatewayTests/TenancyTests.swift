import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

@Suite("Gateway tenancy and keys", .requiresTestStack)
struct TenancyTests {
    /// Tenant B's data, written with B's key; A's key then calls every tenant route aimed at it.
    @Test func aTenantKeyNeverReachesAnotherTenantsData() async throws {
        try await withGateway { h in
            let b = try await h.createTenant("tenant-b")
            let token = deviceToken("b-device")
            #expect(
                try await h.send("PUT", "/v1/subscribers/b-sub", key: b.key, body: ["attributes": ["owner": "b"]])
                    .status == 201)
            #expect(
                try await h.send(
                    "PUT", "/v1/subscribers/b-sub/devices/\(token)", key: b.key,
                    body: ["environment": "production", "bundleId": "com.b.app"]
                ).status == 201)
            #expect(try await h.send("PUT", "/v1/topics/b-topic", key: b.key).status == 201)
            #expect(
                try await h.send("POST", "/v1/topics/b-topic/subscribers", key: b.key, body: ["ids": ["b-sub"]]).status
                    == 200)

            let values = RouteSamples.Values(subscriber: "b-sub", token: token, topic: "b-topic", tenant: b.id)
            // Reads first (A has nothing yet), then writes.
            let tenantRoutes =
                GatewayRoute.table.filter(\.actsOnTenant).filter { $0.method == "GET" }
                + GatewayRoute.table.filter(\.actsOnTenant).filter { $0.method != "GET" }
            #expect(tenantRoutes.count >= 12)
            for route in tenantRoutes {
                let path = RouteSamples.path(route, values)
                let body = RouteSamples.body(route, values)
                // A's key naming B in the header: refused outright.
                let named = try await h.send(route.method, path, key: h.tenantKey, tenant: b.id, body: body)
                #expect(named.status == 403 && named.code == "forbidden_tenant", "\(route.method) \(route.path)")
                // A's key acting on its own tenant never sees B's data.
                let own = try await h.send(route.method, path, key: h.tenantKey, body: body)
                #expect(own.status != 500, "\(route.method) \(route.path)")
                let text = own.data.map { String(decoding: $0.jsonBytes, as: UTF8.self) } ?? ""
                #expect(
                    !text.contains("\"owner\":\"b\"") && !text.contains("com.b.app"),
                    "\(route.method) \(route.path): \(text)")
                // Reads of one of B's things are 404 (lists of A's own things are simply empty).
                if route.method == "GET" && !route.pathParameters.isEmpty {
                    #expect(own.status == 404, "\(route.method) \(route.path) answered \(own.status)")
                }
            }
            // B's data is untouched by everything A did.
            let subscriber = try await h.send("GET", "/v1/subscribers/b-sub", key: b.key)
            #expect(subscriber.data?["attributes"] == ["owner": "b"])
            let devices = try await h.send("GET", "/v1/subscribers/b-sub/devices", key: b.key)
            #expect(devices.items.map { $0["token"]?.stringValue } == [token])
            #expect(devices.items.first?["bundleId"] == "com.b.app")
            let members = try await h.send("GET", "/v1/topics/b-topic/subscribers", key: b.key)
            #expect(members.items.map { $0["subscriberId"]?.stringValue } == ["b-sub"])
            let listed = try await h.send("GET", "/v1/subscribers", key: h.tenantKey)
            #expect(listed.status == 200)
        }
    }

    @Test func workspaceKeysNameTheTenantInAHeader() async throws {
        try await withGateway { h in
            let missing = try await h.send("GET", "/v1/subscribers", key: h.workspaceKey)
            #expect(missing.status == 400 && missing.code == "tenant_required")
            let named = try await h.send("GET", "/v1/subscribers", key: h.workspaceKey, tenant: h.tenantID)
            #expect(named.status == 200)
            let unknown = try await h.send("GET", "/v1/subscribers", key: h.workspaceKey, tenant: UUID().uuidString)
            #expect(unknown.status == 404 && unknown.code == "tenant_not_found")
            let garbage = try await h.send("GET", "/v1/subscribers", key: h.workspaceKey, tenant: "nope")
            #expect(garbage.status == 404 && garbage.code == "tenant_not_found")

            // Another workspace's tenant looks exactly like one that does not exist.
            let other = try await Bootstrapper(postgres: h.postgres, secretKey: nil).run(
                workspace: "other", demo: .init(name: "x"))
            let foreign = try await h.send(
                "GET", "/v1/subscribers", key: h.workspaceKey,
                tenant: other.tenantID!.uuidString.lowercased())
            #expect(foreign.status == 404 && foreign.code == "tenant_not_found")
            let foreignAdmin = try await h.send(
                "GET", "/v1/tenants/\(other.tenantID!.uuidString.lowercased())", key: h.workspaceKey)
            #expect(foreignAdmin.status == 404 && foreignAdmin.code == "tenant_not_found")

            // Tenant keys: no header is fine, their own id is fine, another tenant is forbidden_tenant.
            #expect(try await h.send("GET", "/v1/subscribers", key: h.tenantKey).status == 200)
            #expect(try await h.send("GET", "/v1/subscribers", key: h.tenantKey, tenant: h.tenantID).status == 200)
            let otherTenant = try await h.send(
                "GET", "/v1/subscribers", key: h.tenantKey,
                tenant: other.tenantID!.uuidString.lowercased())
            #expect(otherTenant.status == 403 && otherTenant.code == "forbidden_tenant")
        }
    }

    @Test func missingUnknownAndMalformedKeysAre401() async throws {
        try await withGateway { h in
            for key in [nil, "bk_tk_" + String(repeating: "A", count: 43), "garbage", h.tenantKey + "x"] as [String?] {
                let reply = try await h.send("GET", "/v1/subscribers", key: key)
                #expect(reply.status == 401 && reply.code == "unauthorized")
                #expect(reply.envelope.metadata["requestId"]?.stringValue?.isEmpty == false)
            }
        }
    }

    /// Every keyed route refuses a key that holds every scope but the route's own.
    @Test func everyRouteChecksItsScope() async throws {
        try await withGateway { h in
            let values = RouteSamples.Values(tenant: h.tenantID)
            for route in GatewayRoute.table {
                guard let scope = route.scope else { continue }
                let key: String
                if route.actsOnTenant {
                    key = try await h.createKey(
                        scopes: Scope.tenantScopes.filter { $0 != scope }.map(\.rawValue), tenant: h.tenantID)
                } else {
                    key = try await h.createKey(scopes: Scope.all.filter { $0 != scope }.map(\.rawValue))
                }
                let reply = try await h.send(
                    route.method, RouteSamples.path(route, values), key: key,
                    body: RouteSamples.body(route, values))
                #expect(reply.status == 403 && reply.code == "forbidden_scope", "\(route.method) \(route.path)")
                #expect(reply.envelope.error?.details?["scope"]?.stringValue == scope.rawValue)
                // A tenant key cannot reach the workspace administration at all.
                if !route.actsOnTenant {
                    let tenantReply = try await h.send(
                        route.method, RouteSamples.path(route, values), key: h.tenantKey,
                        body: RouteSamples.body(route, values))
                    #expect(tenantReply.status == 403 && tenantReply.code == "forbidden_scope")
                }
            }
        }
    }

    @Test func clientKeysRegisterDevicesAndIdentifyOnly() async throws {
        try await withGateway { h in
            let token = deviceToken("client")
            let installation = try await h.registerInstallation("anon-1")
            let put = try await h.send(
                "PUT", "/v1/subscribers/anon-1/devices/\(token)", key: h.clientKey,
                body: ["environment": "sandbox"], installation: installation)
            #expect(put.status == 201)
            let identify = try await h.send(
                "POST", "/v1/identify", key: h.clientKey,
                body: ["anonymousId": "anon-1", "subscriberId": "user-1"], installation: installation)
            #expect(identify.status == 200 && identify.data?["devicesMoved"] == 1)
            let devices = try await h.send("GET", "/v1/subscribers/user-1/devices", key: h.tenantKey)
            #expect(devices.items.map { $0["token"]?.stringValue } == [token])
            for (method, path) in [
                ("GET", "/v1/subscribers"), ("PUT", "/v1/subscribers/x"), ("GET", "/v1/subscribers/user-1/devices")
            ] {
                let reply = try await h.send(method, path, key: h.clientKey, installation: installation)
                #expect(reply.status == 403 && reply.code == "forbidden_scope", "\(method) \(path)")
            }
            // A client key may only hold events:write.
            let bad = try await h.send(
                "POST", "/v1/api-keys", key: h.workspaceKey,
                body: [
                    "name": "c", "kind": "client", "tenantId": .string(h.tenantID),
                    "scopes": ["subscribers:read"]
                ])
            #expect(bad.status == 422)
        }
    }

    @Test func aRevokedKeyStopsAtOnceOnEveryReplica() async throws {
        try await withGateway { h in
            let replica = try await GatewayHarness(sharing: h)
            do {
                let key = try await h.createKey(scopes: ["subscribers:read"], tenant: h.tenantID)
                // Both replicas have the key cached now.
                #expect(try await h.send("GET", "/v1/subscribers", key: key).status == 200)
                #expect(try await replica.send("GET", "/v1/subscribers", key: key).status == 200)
                let list = try await h.send("GET", "/v1/api-keys?limit=200", key: h.workspaceKey)
                let id = try #require(
                    list.items.first { $0["prefix"]?.stringValue == String(key.prefix(14)) }?["id"]?.stringValue)
                #expect(list.items.allSatisfy { $0["secret"] == nil })
                let revoked = try await h.send("DELETE", "/v1/api-keys/\(id)", key: h.workspaceKey)
                #expect(revoked.status == 200 && revoked.data?["revokedAt"]?.stringValue != nil)
                // The revoking replica: at once.
                let after = try await h.send("GET", "/v1/subscribers", key: key)
                #expect(after.status == 401 && after.code == "unauthorized")
                // The other replica: as soon as the notification arrives (no TTL wait).
                let stopped = try await RedisTestSupport.eventually(limit: .seconds(20)) {
                    try await replica.send("GET", "/v1/subscribers", key: key).status == 401
                }
                #expect(stopped)
                #expect(
                    try await h.send("DELETE", "/v1/api-keys/\(UUID().uuidString)", key: h.workspaceKey).code
                        == "not_found")
            } catch {
                await replica.close()
                throw error
            }
            await replica.close()
        }
    }

    @Test func lastUsedAtIsWrittenInBatches() async throws {
        try await withGateway { h in
            let key = try await h.createKey(scopes: ["subscribers:read"], tenant: h.tenantID)
            for _ in 0..<3 { _ = try await h.send("GET", "/v1/subscribers", key: key) }
            await h.gateway.lastUsed.flush()
            let rows = try await h.postgres.query(
                "SELECT count(*) FROM api_keys WHERE prefix = $1 AND last_used_at IS NOT NULL",
                [String(key.prefix(14))])
            #expect(try rows[0].decode(Int.self, at: 0) == 1)
        }
    }

    /// A BuzzKit-Tenant header that is present must be a tenant id for every kind of key: empty or
    /// malformed is 404 tenant_not_found, never ignored. A malformed BuzzKit-Installation header is
    /// 401 unauthorized for every kind of key on the routes that document it.
    @Test func malformedTenantAndInstallationHeadersAreRefusedForEveryKey() async throws {
        try await withGateway { h in
            for key in [h.workspaceKey, h.tenantKey] {
                for value in ["", "nope", "0000"] {
                    let reply = try await h.send("GET", "/v1/subscribers", key: key, tenant: value)
                    #expect(reply.status == 404 && reply.code == "tenant_not_found", "\(value.debugDescription)")
                }
            }
            let client = try await h.send(
                "POST", "/v1/installations", key: h.clientKey, tenant: "", body: ["anonymousId": "a-1"])
            #expect(client.status == 404 && client.code == "tenant_not_found")
            let token = deviceToken("headers")
            for value in ["", "nope", "bk_inst_short"] {
                let reply = try await h.send(
                    "PUT", "/v1/subscribers/s/devices/\(token)", key: h.tenantKey,
                    body: ["environment": "sandbox"], installation: value)
                #expect(reply.status == 401 && reply.code == "unauthorized", "\(value.debugDescription)")
            }
            let wellFormed = try await h.send(
                "PUT", "/v1/subscribers/s/devices/\(token)", key: h.tenantKey,
                body: ["environment": "sandbox"],
                installation: "bk_inst_" + String(repeating: "A", count: 43))
            #expect(wellFormed.status == 201)
        }
    }
}
