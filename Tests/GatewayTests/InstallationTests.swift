import BuzzKitCrypto
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// Installation tokens: a client key acts only for its own installation's identities.
@Suite("Gateway installations (client keys)", .requiresTestStack)
struct InstallationTests {
    /// A request on a client-key route, made for `identity` (the subscriber id in the path, the
    /// events' identity, identify's anonymous id).
    static func request(_ route: GatewayRoute, identity: String, anonymous: Bool = true) -> (String, String, JSONValue?)
    {
        let token = deviceToken("device-\(identity)")
        switch route.operationID {
        case "trackEvents":
            let event = Self.event(UUID().uuidString)
            return (
                "POST", "/v1/events", [anonymous ? "anonymousId" : "subscriberId": .string(identity), "events": [event]]
            )
        case "registerDevice":
            return ("PUT", "/v1/subscribers/\(identity)/devices/\(token)", ["environment": "sandbox"])
        case "deleteDevice":
            return ("DELETE", "/v1/subscribers/\(identity)/devices/\(token)", nil)
        case "registerLiveActivity":
            return (
                "PUT", "/v1/subscribers/\(identity)/live-activities/act-\(identity)",
                ["attributesType": "MatchAttributes", "token": .string(token), "environment": "sandbox"]
            )
        case "endLiveActivity":
            return ("DELETE", "/v1/subscribers/\(identity)/live-activities/act-\(identity)", nil)
        case "registerLiveActivityStartToken":
            return (
                "PUT", "/v1/subscribers/\(identity)/live-activity-start-tokens/MatchAttributes",
                ["token": .string(token), "environment": "sandbox"]
            )
        case "getPreferences":
            return ("GET", "/v1/subscribers/\(identity)/preferences", nil)
        case "putPreferences":
            return ("PUT", "/v1/subscribers/\(identity)/preferences", ["all": false])
        case "identify":
            return (
                "POST", "/v1/identify",
                ["anonymousId": .string(identity), "subscriberId": .string("user-of-\(identity)")]
            )
        default:
            Issue.record("no sample request for the client-key route \(route.method) \(route.path)")
            return (route.method, route.path, nil)
        }
    }

    /// Client-key routes that also need `BuzzKit-Subscriber-Signature`.
    static let signed: Set<String> = ["getPreferences", "putPreferences"]

    static func event(_ id: String) -> JSONValue {
        ["id": .string(id), "name": "app.opened", "timestamp": .string(ISO8601DateFormatter().string(from: Date()))]
    }

    /// Table-driven over every route a client key may call with its installation: its own identity
    /// is allowed, another installation's is 403, no header is 401 installation_required, another
    /// tenant's (or an unknown) token is 401 unauthorized, a server key needs no header.
    @Test func everyClientKeyRouteIsBoundToTheInstallation() async throws {
        try await withGateway { h in
            let routes = GatewayRoute.table.filter(\.needsInstallation)
            #expect(
                Set(routes.map(\.operationID)) == [
                    "trackEvents", "registerDevice", "deleteDevice", "identify",
                    "registerLiveActivity", "endLiveActivity", "registerLiveActivityStartToken",
                    "getPreferences", "putPreferences"
                ])
            // Tenant B with its own client key and installation.
            let b = try await h.createTenant("tenant-b")
            let bClient = try await h.createKey(scopes: ["events:write"], tenant: b.id, kind: "client")
            let bToken = try await h.registerInstallation("b-anon", key: bClient)
            for (index, route) in routes.enumerated() {
                let mine = "mine-\(index)"
                let theirs = "theirs-\(index)"
                let token = try await h.registerInstallation(mine)
                _ = try await h.registerInstallation(theirs)
                let label = "\(route.method) \(route.path)"

                let (m1, p1, b1) = Self.request(route, identity: theirs)
                let other = try await h.send(m1, p1, key: h.clientKey, body: b1, installation: token)
                #expect(other.status == 403 && other.code == "forbidden_installation", "\(label): \(other.envelope)")

                let (m2, p2, b2) = Self.request(route, identity: mine)
                let missing = try await h.send(m2, p2, key: h.clientKey, body: b2)
                #expect(missing.status == 401 && missing.code == "installation_required", "\(label)")
                let foreign = try await h.send(m2, p2, key: h.clientKey, body: b2, installation: bToken)
                #expect(foreign.status == 401 && foreign.code == "unauthorized", "\(label)")
                let unknown = try await h.send(
                    m2, p2, key: h.clientKey, body: b2,
                    installation: "bk_inst_" + String(repeating: "A", count: 43))
                #expect(unknown.status == 401 && unknown.code == "unauthorized", "\(label)")
                let garbage = try await h.send(m2, p2, key: h.clientKey, body: b2, installation: "nope")
                #expect(garbage.status == 401 && garbage.code == "unauthorized", "\(label)")
                let own = try await h.send(m2, p2, key: h.clientKey, body: b2, installation: token)
                // Preferences also need the subscriber's signature (PolicyRoutesTests has the signed
                // calls): the installation is accepted, the missing signature is what refuses.
                if Self.signed.contains(route.operationID) {
                    #expect(own.status == 403 && own.code == "forbidden_subscriber", "\(label): \(own.envelope)")
                } else {
                    #expect((200..<300).contains(own.status), "\(label): \(own.status) \(own.envelope)")
                }

                // Server keys never need the header and may act for anyone.
                let (m3, p3, b3) = Self.request(route, identity: "server-\(index)")
                if Self.signed.contains(route.operationID) {
                    _ = try await h.send("PUT", "/v1/subscribers/server-\(index)", key: h.tenantKey, body: [:])
                }
                let server = try await h.send(m3, p3, key: h.tenantKey, body: b3)
                #expect((200..<300).contains(server.status), "\(label): \(server.status) \(server.envelope)")
            }
        }
    }

    @Test func registrationShowsTheTokenOnceStoresItsHashAndRefusesATakenAnonymousID() async throws {
        try await withGateway { h in
            let reply = try await h.send(
                "POST", "/v1/installations", key: h.clientKey, body: ["anonymousId": "anon-reg"])
            #expect(reply.status == 201)
            let token = try #require(reply.data?["token"]?.stringValue)
            #expect(token.hasPrefix("bk_inst_") && token.utf8.count == 8 + 43)
            #expect(reply.data?["anonymousId"] == "anon-reg" && reply.data?["subscriberId"] == .null)
            #expect(UUID(uuidString: reply.data?["id"]?.stringValue ?? "") != nil)
            #expect(reply.data?["createdAt"]?.stringValue != nil)
            let rows = try await h.postgres.query(
                "SELECT token_hash FROM installations WHERE anonymous_id = 'anon-reg'")
            #expect(try rows.first?.decode(Data.self, at: 0) == Data(Digest.sha256(Array(token.utf8))))

            let again = try await h.send(
                "POST", "/v1/installations", key: h.clientKey, body: ["anonymousId": "anon-reg"])
            #expect(again.status == 409 && again.code == "installation_exists")
            #expect(again.data == nil)
            // A server key with subscribers:write may register too; the same anonymous id is taken for it as well.
            #expect(
                try await h.send("POST", "/v1/installations", key: h.tenantKey, body: ["anonymousId": "anon-reg"]).code
                    == "installation_exists")
            #expect(
                try await h.send("POST", "/v1/installations", key: h.tenantKey, body: ["anonymousId": "anon-srv"])
                    .status == 201)
            // Another tenant may use the same anonymous id.
            let b = try await h.createTenant("tenant-b")
            let bClient = try await h.createKey(scopes: ["events:write"], tenant: b.id, kind: "client")
            #expect(
                try await h.send("POST", "/v1/installations", key: bClient, body: ["anonymousId": "anon-reg"]).status
                    == 201)

            for bad: JSONValue in [
                [:], ["anonymousId": ""], ["anonymousId": .string(String(repeating: "é", count: 65))],
                ["anonymousId": 3], ["anonymousId": "a", "extra": 1]
            ] {
                let invalid = try await h.send("POST", "/v1/installations", key: h.clientKey, body: bad)
                #expect(invalid.status == 422 && invalid.code == "validation_failed", "\(bad)")
            }
            // 128 bytes exactly is fine.
            let longest = String(repeating: "x", count: 128)
            #expect(
                try await h.send("POST", "/v1/installations", key: h.clientKey, body: ["anonymousId": .string(longest)])
                    .status == 201)
        }
    }

    /// Identify records the subscriber id on the installation; identify again under another id moves it.
    @Test func identifyRecordsTheSubscriberAndMovesIt() async throws {
        try await withGateway { h in
            let token = try await h.registerInstallation("anon-id")
            let event = Self.event("e1")
            let early = try await h.send(
                "POST", "/v1/events", key: h.clientKey,
                body: ["subscriberId": "user-a", "events": [event]], installation: token)
            #expect(early.status == 403 && early.code == "forbidden_installation")

            let identify = try await h.send(
                "POST", "/v1/identify", key: h.clientKey,
                body: ["anonymousId": "anon-id", "subscriberId": "user-a"], installation: token)
            #expect(identify.status == 200)
            #expect(
                try await h.send(
                    "POST", "/v1/events", key: h.clientKey,
                    body: ["subscriberId": "user-a", "events": [event]], installation: token
                ).status == 202)
            let device = deviceToken("d-user-a")
            #expect(
                try await h.send(
                    "PUT", "/v1/subscribers/user-a/devices/\(device)", key: h.clientKey,
                    body: ["environment": "sandbox"], installation: token
                ).status == 201)
            // The anonymous id still works.
            #expect(
                try await h.send(
                    "POST", "/v1/events", key: h.clientKey,
                    body: ["anonymousId": "anon-id", "events": [event]], installation: token
                ).status == 202)

            let moved = try await h.send(
                "POST", "/v1/identify", key: h.clientKey,
                body: ["anonymousId": "anon-id", "subscriberId": "user-b"], installation: token)
            #expect(moved.status == 200)
            let old = try await h.send(
                "POST", "/v1/events", key: h.clientKey,
                body: ["subscriberId": "user-a", "events": [event]], installation: token)
            #expect(old.status == 403 && old.code == "forbidden_installation")
            #expect(
                try await h.send(
                    "POST", "/v1/events", key: h.clientKey,
                    body: ["subscriberId": "user-b", "events": [event]], installation: token
                ).status == 202)
            // Identify for another installation's anonymous id is refused.
            _ = try await h.registerInstallation("anon-other")
            let foreign = try await h.send(
                "POST", "/v1/identify", key: h.clientKey,
                body: ["anonymousId": "anon-other", "subscriberId": "user-c"], installation: token)
            #expect(foreign.status == 403 && foreign.code == "forbidden_installation")
        }
    }

    /// A replica that cached the installation before identify ran elsewhere re-reads it instead of refusing.
    @Test func anotherReplicaSeesIdentifyWithoutWaitingForTheCache() async throws {
        try await withGateway { h in
            let replica = try await GatewayHarness(sharing: h)
            do {
                let token = try await h.registerInstallation("anon-rep")
                let event = Self.event("e1")
                #expect(
                    try await replica.send(
                        "POST", "/v1/events", key: h.clientKey,
                        body: ["anonymousId": "anon-rep", "events": [event]], installation: token
                    ).status == 202)
                #expect(
                    try await h.send(
                        "POST", "/v1/identify", key: h.clientKey,
                        body: ["anonymousId": "anon-rep", "subscriberId": "user-rep"], installation: token
                    ).status == 200)
                let after = try await replica.send(
                    "POST", "/v1/events", key: h.clientKey,
                    body: ["subscriberId": "user-rep", "events": [event]], installation: token)
                #expect(after.status == 202, "\(after.envelope)")
            } catch {
                await replica.close()
                throw error
            }
            await replica.close()
        }
    }

    /// Revoking the client key revokes the installations it registered (on every replica), and frees
    /// their anonymous ids for the app's next key.
    @Test func revokingTheKeyRevokesItsInstallations() async throws {
        try await withGateway { h in
            let replica = try await GatewayHarness(sharing: h)
            do {
                let oldKey = try await h.createKey(scopes: ["events:write"], tenant: h.tenantID, kind: "client")
                let newKey = try await h.createKey(scopes: ["events:write"], tenant: h.tenantID, kind: "client")
                let token = try await h.registerInstallation("anon-rev", key: oldKey)
                let event = Self.event("e1")
                let body: JSONValue = ["anonymousId": "anon-rev", "events": [event]]
                // Any client key of the tenant may carry the token; both replicas cache it now.
                #expect(
                    try await h.send("POST", "/v1/events", key: newKey, body: body, installation: token).status == 202)
                #expect(
                    try await replica.send("POST", "/v1/events", key: newKey, body: body, installation: token).status
                        == 202)
                let list = try await h.send("GET", "/v1/api-keys?limit=200", key: h.workspaceKey)
                let id = try #require(
                    list.items.first { $0["prefix"]?.stringValue == String(oldKey.prefix(14)) }?["id"]?.stringValue)
                #expect(try await h.send("DELETE", "/v1/api-keys/\(id)", key: h.workspaceKey).status == 200)

                let after = try await h.send("POST", "/v1/events", key: newKey, body: body, installation: token)
                #expect(after.status == 401 && after.code == "unauthorized")
                let stopped = try await RedisTestSupport.eventually(limit: .seconds(20)) {
                    try await replica.send("POST", "/v1/events", key: newKey, body: body, installation: token).status
                        == 401
                }
                #expect(stopped)
                // The anonymous id is free again: the app registers anew with its new key.
                let fresh = try await h.registerInstallation("anon-rev", key: newKey)
                #expect(
                    try await h.send("POST", "/v1/events", key: newKey, body: body, installation: fresh).status == 202)
            } catch {
                await replica.close()
                throw error
            }
            await replica.close()
        }
    }
}
