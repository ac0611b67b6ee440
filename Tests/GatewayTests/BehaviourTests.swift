import BuzzKitCrypto
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

@Suite("Gateway shared behaviour", .requiresTestStack)
struct BehaviourTests {
    @Test func idempotentReplayAndConflict() async throws {
        try await withGateway { h in
            #expect(try await h.send("PUT", "/v1/topics/news", key: h.tenantKey).status == 201)
            let body: JSONValue = ["ids": ["a", "b"]]
            let first = try await h.send(
                "POST", "/v1/topics/news/subscribers", key: h.tenantKey, body: body,
                headers: ["Idempotency-Key": "k-1"])
            #expect(first.status == 200 && first.data?["added"] == 2)
            #expect(first.envelope.metadata["replayed"] == nil)
            let again = try await h.send(
                "POST", "/v1/topics/news/subscribers", key: h.tenantKey, body: body,
                headers: ["Idempotency-Key": "k-1"])
            #expect(again.status == 200 && again.data == first.data)
            #expect(again.envelope.metadata["replayed"] == true)
            #expect(again.envelope.metadata["requestId"] != first.envelope.metadata["requestId"])
            let other = try await h.send(
                "POST", "/v1/topics/news/subscribers", key: h.tenantKey, body: ["ids": ["c"]],
                headers: ["Idempotency-Key": "k-1"])
            #expect(other.status == 409 && other.code == "idempotency_key_reused")
            // Without the header the call simply runs again (and is idempotent by itself).
            let plain = try await h.send("POST", "/v1/topics/news/subscribers", key: h.tenantKey, body: body)
            #expect(plain.status == 200 && plain.data?["added"] == 0)
            // Keys are scoped per tenant: another tenant may use the same key.
            let b = try await h.createTenant("b")
            #expect(try await h.send("PUT", "/v1/topics/news", key: b.key).status == 201)
            let elsewhere = try await h.send(
                "POST", "/v1/topics/news/subscribers", key: b.key, body: ["ids": ["z"]],
                headers: ["Idempotency-Key": "k-1"])
            #expect(elsewhere.status == 200 && elsewhere.envelope.metadata["replayed"] == nil)
            // Admin routes too: a replayed tenant creation does not create a second tenant.
            let t1 = try await h.send(
                "POST", "/v1/tenants", key: h.workspaceKey, body: ["name": "once"],
                headers: ["Idempotency-Key": "create-once"])
            let t2 = try await h.send(
                "POST", "/v1/tenants", key: h.workspaceKey, body: ["name": "once"],
                headers: ["Idempotency-Key": "create-once"])
            #expect(t1.status == 201 && t2.status == 201 && t1.data?["id"] == t2.data?["id"])
            #expect(t2.envelope.metadata["replayed"] == true)
        }
    }

    @Test func aReplayShowsTheSecretAgainWithoutStoringItInClear() async throws {
        try await withGateway { h in
            let body: JSONValue = ["name": "ci", "scopes": ["events:write"], "tenantId": .string(h.tenantID)]
            let first = try await h.send(
                "POST", "/v1/api-keys", key: h.workspaceKey, body: body,
                headers: ["Idempotency-Key": "secret-once"])
            let secret = try #require(first.data?["secret"]?.stringValue)
            let again = try await h.send(
                "POST", "/v1/api-keys", key: h.workspaceKey, body: body,
                headers: ["Idempotency-Key": "secret-once"])
            #expect(again.status == 201 && again.data?["secret"]?.stringValue == secret)
            #expect(again.envelope.metadata["replayed"] == true)
            let stored = try await h.postgres.query(
                "SELECT response_body FROM idempotency_records WHERE idempotency_key = 'secret-once'")
            let bytes = try #require(stored.first).decode(Data.self, at: 0)
            #expect(!bytes.isEmpty)
            #expect(bytes.range(of: Data(secret.utf8)) == nil)
            #expect(bytes.range(of: Data(secret.suffix(12).utf8)) == nil)
        }
    }

    @Test func aDuplicateInFlightIsAConflict() async throws {
        try await withGateway { h in
            // A claim left unfinished (as while the first request runs).
            let scope = try #require(h.bootstrap.tenantID)
            let hash = Data(repeating: 1, count: 32)
            try await h.postgres.execute(
                "INSERT INTO idempotency_records (scope, idempotency_key, request_hash) VALUES ($1::uuid, 'busy', $2)",
                [scope, hash])
            let reply = try await h.send(
                "POST", "/v1/identify", key: h.tenantKey, body: ["anonymousId": "a", "subscriberId": "b"],
                headers: ["Idempotency-Key": "busy"])
            #expect(reply.status == 409)
        }
    }

    /// Claims of one key at the same moment are ordered by the key's lock (no unique index holds
    /// them since the records are partitioned by day): the request runs once.
    @Test func concurrentClaimsOfOneKeyRunTheRequestOnce() async throws {
        try await withGateway { h in
            let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await h.send(
                            "POST", "/v1/tenants", key: h.workspaceKey, body: ["name": "raced"],
                            headers: ["Idempotency-Key": "raced-once"])
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let ran = replies.filter { $0.status == 201 && $0.envelope.metadata["replayed"] == nil }
            #expect(ran.count == 1)
            #expect(replies.allSatisfy { $0.status == 201 || ($0.status == 409 && $0.code == "conflict") })
            let created = try await h.postgres.query("SELECT count(*) FROM tenants WHERE name = 'raced'")
            #expect(try created[0].decode(Int.self, at: 0) == 1)
        }
    }

    /// An expired record is not replayed (the key runs again), and its day goes whole once past the
    /// 24 hours; the days ahead are made.
    @Test func anExpiredRecordIsForgottenAndItsDayDropped() async throws {
        try await withGateway { h in
            let scope = try #require(h.bootstrap.tenantID)
            try await h.postgres.execute(
                """
                INSERT INTO idempotency_records (scope, idempotency_key, request_hash, status, response_body, created_at,
                                                 expires_at)
                VALUES ($1::uuid, 'old', '\\x00', 200, '{}', now() - interval '30 hours', now() - interval '6 hours')
                """, [scope])
            let fresh = try await h.send(
                "POST", "/v1/identify", key: h.tenantKey, body: ["anonymousId": "a", "subscriberId": "b"],
                headers: ["Idempotency-Key": "old"])
            #expect(fresh.status == 200 && fresh.envelope.metadata["replayed"] == nil)
            let records = "SELECT count(*) FROM idempotency_records WHERE idempotency_key = 'old'"
            #expect(try await h.postgres.query(records)[0].decode(Int.self, at: 0) == 2)
            // Two days on, every day before it has passed its 24 hours.
            // The gateway's own loop may hold the pass's lock at this moment (its pass at start).
            var pass = try await h.gateway.idempotencyRetention.pass(now: Date().addingTimeInterval(2 * 86_400))
            for _ in 0..<50 where !pass.ran {
                try await Task.sleep(for: .milliseconds(200))
                pass = try await h.gateway.idempotencyRetention.pass(now: Date().addingTimeInterval(2 * 86_400))
            }
            #expect(pass.ran && pass.dropped.contains("idempotency_records_legacy"))
            #expect(try await h.postgres.query(records)[0].decode(Int.self, at: 0) == 0)
            #expect(pass.partitionsAhead >= 7)
        }
    }

    @Test func validationListsEveryProblemAtOnce() async throws {
        try await withGateway { h in
            let reply = try await h.send(
                "PUT", "/v1/subscribers/s1/devices/not-hex", key: h.tenantKey,
                body: [
                    "environment": "staging", "timezone": "Mars/Olympus", "locale": "1234",
                    "permission": "maybe", "color": "red"
                ])
            #expect(reply.status == 422 && reply.code == "validation_failed")
            let paths = Set((reply.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue })
            #expect(paths == ["path.token", "environment", "timezone", "locale", "permission", "color"])
            let messages = (reply.envelope.error?.details?.arrayValue ?? []).compactMap { $0["message"]?.stringValue }
            #expect(messages.allSatisfy { !$0.isEmpty })

            let tenant = try await h.send(
                "POST", "/v1/tenants", key: h.workspaceKey,
                body: [
                    "apns": ["teamId": "x", "privateKey": "not a key", "environment": "dev"],
                    "quietHours": ["start": "25:00"]
                ])
            let tenantPaths = Set(
                (tenant.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue })
            #expect(
                tenantPaths == [
                    "name", "apns.teamId", "apns.keyId", "apns.bundleId", "apns.privateKey",
                    "apns.environment", "quietHours.start", "quietHours.end"
                ])
            let subscriber = try await h.send(
                "PUT", "/v1/subscribers/x", key: h.tenantKey, body: ["timezone": "Europe/Berlin"])
            #expect(subscriber.status == 201 && subscriber.data?["timezone"] == "Europe/Berlin")
            let notJSON = try await h.send(
                "POST", "/v1/identify", key: h.tenantKey, headers: ["Content-Type": "application/json"])
            #expect(notJSON.status == 400 && notJSON.code == "invalid_json")
            let badLimit = try await h.send("GET", "/v1/subscribers?limit=0&cursor=%%%", key: h.tenantKey)
            #expect(badLimit.status == 422)
            #expect(
                Set((badLimit.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue }) == [
                    "limit", "cursor"
                ])
        }
    }

    @Test func paginationReturnsEveryRowOnceUnderInserts() async throws {
        try await withGateway { h in
            var created: Set<String> = []
            for i in 0..<23 {
                let id = String(format: "user-%03d", i * 2)
                #expect(try await h.send("PUT", "/v1/subscribers/\(id)", key: h.tenantKey).status == 201)
                created.insert(id)
            }
            var seen: [String] = []
            var cursor: String?
            var pages = 0
            var inserted = 0
            repeat {
                let query = cursor.map { "?limit=5&cursor=\($0)" } ?? "?limit=5"
                let page = try await h.send("GET", "/v1/subscribers\(query)", key: h.tenantKey)
                #expect(page.status == 200)
                seen += page.items.compactMap { $0["id"]?.stringValue }
                let hasMore = page.envelope.metadata["hasMore"]?.boolValue ?? false
                cursor = hasMore ? page.envelope.metadata["cursor"]?.stringValue : nil
                #expect(hasMore == (cursor != nil))
                // Inserts between pages, before and after the cursor.
                inserted += 1
                _ = try await h.send(
                    "PUT", "/v1/subscribers/user-\(String(format: "%03d", inserted * 7 + 1))", key: h.tenantKey)
                pages += 1
            } while cursor != nil && pages < 50
            let original = seen.filter { created.contains($0) }
            #expect(original.count == created.count && Set(original) == created)
            #expect(Set(seen).count == seen.count)
            #expect(seen == seen.sorted())
        }
    }

    @Test func rateLimitAnswers429WithHeaders() async throws {
        let limit = RateLimitConfiguration(
            requestsPerSecond: 0.001, burst: 2, keyPrefix: "bk:test:\(UUID().uuidString):")
        try await withGateway(rateLimit: limit) { h in
            var limited: Reply?
            for _ in 0..<20 {
                let reply = try await h.send("GET", "/v1/subscribers", key: h.tenantKey)
                #expect(reply.headers["RateLimit-Limit"] == "2")
                #expect(reply.headers["RateLimit-Remaining"] != nil && reply.headers["RateLimit-Reset"] != nil)
                if reply.status == 429 {
                    limited = reply
                    break
                }
                #expect(reply.status == 200)
            }
            let reply = try #require(limited)
            #expect(reply.code == "rate_limited")
            #expect(Int(reply.headers["Retry-After"] ?? "") ?? 0 >= 1)
            #expect(reply.headers["RateLimit-Remaining"] == "0")
            // Another key has its own bucket.
            #expect(try await h.send("GET", "/v1/subscribers", key: h.workspaceKey, tenant: h.tenantID).status == 200)
        }
    }

    @Test func tenantsKeepTheirP8KeySealed() async throws {
        try await withGateway { h in
            let pem = ES256Fixture.pem
            let created = try await h.send(
                "POST", "/v1/tenants", key: h.workspaceKey,
                body: [
                    "name": "app",
                    "apns": [
                        "teamId": "ABCDE12345", "keyId": "KEY1234567", "privateKey": .string(pem),
                        "bundleId": "com.example.app", "environment": "sandbox"
                    ],
                    "quietHours": ["start": "22:00", "end": "07:30"]
                ])
            #expect(created.status == 201)
            #expect(created.data?["apns"]?["privateKeyConfigured"] == true)
            #expect(created.data?["quietHours"] == ["start": "22:00", "end": "07:30"])
            let text = String(decoding: try #require(created.data).jsonBytes, as: UTF8.self)
            #expect(!text.contains("PRIVATE KEY"))
            let id = try #require(created.data?["id"]?.stringValue)
            let stored = try await h.postgres.query("SELECT apns_private_key FROM tenants WHERE id = $1::uuid", [id])
            let sealed = try #require(try stored[0].decode(Data?.self, at: 0))
            #expect(!String(decoding: sealed, as: UTF8.self).contains("PRIVATE KEY"))
            let patched = try await h.send(
                "PATCH", "/v1/tenants/\(id)", key: h.workspaceKey,
                body: ["name": "renamed", "quietHours": nil])
            #expect(patched.status == 200 && patched.data?["name"] == "renamed" && patched.data?["quietHours"] == .null)
            #expect(patched.data?["apns"]?["teamId"] == "ABCDE12345")
            let list = try await h.send("GET", "/v1/tenants", key: h.workspaceKey)
            #expect(list.items.count == 2)
        }
    }

    @Test func aDeviceTokenMovesToItsNewSubscriber() async throws {
        try await withGateway { h in
            let token = deviceToken("moving")
            #expect(
                try await h.send(
                    "PUT", "/v1/subscribers/alice/devices/\(token.uppercased())", key: h.tenantKey,
                    body: ["environment": "sandbox"]
                ).status == 201)
            let moved = try await h.send(
                "PUT", "/v1/subscribers/bob/devices/\(token)", key: h.tenantKey,
                body: ["environment": "production", "permission": "authorized"])
            #expect(moved.status == 200 && moved.data?["subscriberId"] == "bob" && moved.data?["active"] == true)
            #expect(try await h.send("GET", "/v1/subscribers/alice/devices", key: h.tenantKey).items.isEmpty)
            let bob = try await h.send("GET", "/v1/subscribers/bob/devices", key: h.tenantKey)
            #expect(bob.items.count == 1 && bob.items[0]["lastRejectedAt"] == .null)
            // Deleting the subscriber removes its devices; deleting again is fine.
            #expect(try await h.send("DELETE", "/v1/subscribers/bob", key: h.tenantKey).data?["deleted"] == true)
            #expect(try await h.send("DELETE", "/v1/subscribers/bob", key: h.tenantKey).data?["deleted"] == false)
            let left = try await h.postgres.query("SELECT count(*) FROM devices")
            #expect(try left[0].decode(Int.self, at: 0) == 0)
        }
    }
}

/// A P-256 key in PKCS#8 PEM, as an Apple .p8 file is.
enum ES256Fixture {
    static var pem: String { ES256PrivateKey.generate().pem }
}
