import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@testable import GatewayApp

/// `GET` and `PUT /v1/subscribers/{id}` are batched across concurrent requests; every request must
/// still get exactly its own answer.
@Suite("Gateway subscriber batching", .requiresTestStack)
struct SubscriberBatchTests {
    /// 10 subscribers written 6 times each, all at once: no write is lost (each adds its own
    /// attribute), exactly one of each id's writes is the 201 that created it, and concurrent
    /// reads see a subscriber or a 404, never another one's row.
    @Test func concurrentWritesOfTheSameSubscriberAreAllApplied() async throws {
        try await withGateway { h in
            #expect(
                try await h.send(
                    "PUT", "/v1/subscribers/reader", key: h.tenantKey, body: ["attributes": ["who": "reader"]]
                ).status == 201)
            let replies = try await withThrowingTaskGroup(of: (String, Int, Reply).self) { group in
                for round in 0..<6 {
                    for n in 0..<10 {
                        group.addTask {
                            let reply = try await h.send(
                                "PUT", "/v1/subscribers/s\(n)", key: h.tenantKey,
                                body: [
                                    "attributes": .object(["r\(round)": .int(Int64(round)), "gone": .null]),
                                    "timezone": "Europe/Berlin"
                                ])
                            return ("s\(n)", round, reply)
                        }
                    }
                    group.addTask {
                        ("reader", -1, try await h.send("GET", "/v1/subscribers/reader", key: h.tenantKey))
                    }
                    group.addTask {
                        ("missing", -1, try await h.send("GET", "/v1/subscribers/missing-\(round)", key: h.tenantKey))
                    }
                }
                var all: [(String, Int, Reply)] = []
                for try await reply in group { all.append(reply) }
                return all
            }
            for n in 0..<10 {
                let writes = replies.filter { $0.0 == "s\(n)" }
                #expect(writes.count == 6)
                #expect(writes.filter { $0.2.status == 201 }.count == 1, "s\(n): \(writes.map(\.2.status))")
                #expect(writes.filter { $0.2.status == 200 }.count == 5)
                #expect(writes.allSatisfy { $0.2.data?["id"]?.stringValue == "s\(n)" })
                let stored = try await h.send("GET", "/v1/subscribers/s\(n)", key: h.tenantKey)
                let keys = Set(stored.data?["attributes"]?.objectValue?.keys.map { $0 } ?? [])
                #expect(keys == Set((0..<6).map { "r\($0)" }), "s\(n): \(keys)")
                #expect(stored.data?["timezone"] == "Europe/Berlin")
            }
            for reply in replies where reply.0 == "reader" {
                #expect(reply.2.status == 200 && reply.2.data?["attributes"] == ["who": "reader"])
            }
            for reply in replies where reply.0 == "missing" {
                #expect(reply.2.status == 404 && reply.2.code == "not_found")
            }
        }
    }

    /// A write that fails in the database (its tenant was deleted under the cached tenant lookup)
    /// fails alone: the writes batched with it succeed.
    @Test func oneFailingWriteDoesNotFailItsBatch() async throws {
        try await withGateway { h in
            let doomed = try await h.createTenant("doomed")
            // The workspace key's tenant lookup is cached now; then the tenant disappears.
            #expect(try await h.send("GET", "/v1/subscribers", key: h.workspaceKey, tenant: doomed.id).status == 200)
            try await h.postgres.execute("DELETE FROM tenants WHERE id = $1::uuid", [UUID(uuidString: doomed.id)!])
            let replies = try await withThrowingTaskGroup(of: (Bool, Reply).self) { group in
                for n in 0..<30 {
                    let bad = n % 10 == 0
                    group.addTask {
                        (
                            bad,
                            try await h.send(
                                "PUT", "/v1/subscribers/w\(n)", key: h.workspaceKey,
                                tenant: bad ? doomed.id : h.tenantID, body: ["attributes": ["n": .int(Int64(n))]])
                        )
                    }
                }
                var all: [(Bool, Reply)] = []
                for try await reply in group { all.append(reply) }
                return all
            }
            #expect(replies.filter { $0.0 }.allSatisfy { $0.1.status == 500 && $0.1.code == "internal_error" })
            #expect(
                replies.filter { !$0.0 }.allSatisfy { $0.1.status == 201 },
                "\(replies.filter { !$0.0 }.map(\.1.status))")
            #expect(replies.filter { !$0.0 }.count == 27)
        }
    }

    /// Batched writes carry every field shape through the one-document statement, and batched
    /// reads splice the stored JSON as PostgreSQL wrote it: a body without attributes keeps them,
    /// a null time zone clears it, a null attribute removes it, and strings with quotes,
    /// backslashes and non-ASCII text come back exactly as sent, in the PUT and the GET answer.
    @Test func batchedWritesAndReadsKeepEveryFieldShape() async throws {
        try await withGateway { h in
            let tricky: JSONValue = ["q": "say \"hi\" \\ ü 🎉\n", "n": ["deep": [1, 2.5, true, nil]]]
            let cases: [(body: JSONValue, expect: (attributes: JSONValue, timezone: JSONValue, locale: JSONValue))] = [
                ([:], (["keep": "yes"], "Europe/Berlin", nil)),
                (["timezone": nil], (["keep": "yes"], nil, nil)),
                (
                    ["attributes": tricky],
                    (
                        ["keep": "yes", "q": tricky.objectValue!["q"]!, "n": tricky.objectValue!["n"]!],
                        "Europe/Berlin", nil
                    )
                ),
                (["locale": "en-US", "attributes": ["keep": nil]], ([:], "Europe/Berlin", "en-US"))
            ]
            for c in cases.indices {
                for n in 0..<4 {
                    #expect(
                        try await h.send(
                            "PUT", "/v1/subscribers/shape-\(c)-\(n)", key: h.tenantKey,
                            body: ["attributes": ["keep": "yes"], "timezone": "Europe/Berlin"]
                        ).status == 201)
                }
            }
            let replies = try await withThrowingTaskGroup(of: (Int, Reply).self) { group in
                for c in cases.indices {
                    for n in 0..<4 {
                        group.addTask {
                            (
                                c,
                                try await h.send(
                                    "PUT", "/v1/subscribers/shape-\(c)-\(n)", key: h.tenantKey, body: cases[c].body)
                            )
                        }
                    }
                }
                var all: [(Int, Reply)] = []
                for try await reply in group { all.append(reply) }
                return all
            }
            #expect(replies.count == 16)
            for (c, reply) in replies {
                let expected = cases[c].expect
                #expect(reply.status == 200)
                #expect(reply.headers["Content-Type"]?.hasPrefix("application/json") == true)
                #expect(
                    reply.data?["attributes"] == expected.attributes, "case \(c): \(String(describing: reply.data))")
                #expect(reply.data?["timezone"] == expected.timezone)
                #expect(reply.data?["locale"] == expected.locale)
            }
            let reads = try await withThrowingTaskGroup(of: (Int, Reply).self) { group in
                for c in cases.indices {
                    for n in 0..<4 {
                        group.addTask {
                            (c, try await h.send("GET", "/v1/subscribers/shape-\(c)-\(n)", key: h.tenantKey))
                        }
                    }
                }
                var all: [(Int, Reply)] = []
                for try await reply in group { all.append(reply) }
                return all
            }
            for (c, reply) in reads {
                let expected = cases[c].expect
                #expect(reply.status == 200)
                #expect(
                    reply.data?["attributes"] == expected.attributes, "case \(c): \(String(describing: reply.data))")
                #expect(reply.data?["timezone"] == expected.timezone)
                #expect(reply.data?["locale"] == expected.locale)
                #expect(reply.data?["anonymous"] == false)
                #expect(reply.data?["createdAt"]?.stringValue?.isEmpty == false)
                #expect(reply.envelope.metadata["requestId"]?.stringValue == reply.headers["X-Request-Id"])
            }
        }
    }

    /// One batch holding every kind of write, straight through `SubscriberBatches.write`: writes
    /// of one shape share the plain upsert, writes that remove an attribute take the general
    /// statement, and each answer (and stored row) is what that write alone would have made.
    @Test func aBatchOfMixedShapesGivesEachWriteItsOwnResult() async throws {
        try await withGateway { h in
            let tenant = h.bootstrap.tenantID!
            for id in ["old-a", "old-b", "old-c", "old-d"] {
                try await h.postgres.execute(
                    """
                    INSERT INTO subscribers (tenant_id, id, attributes, timezone, locale)
                    VALUES ($1::uuid, $2, '{"keep":"yes","drop":1}', 'Europe/Berlin', 'de-DE')
                    """, [tenant, id])
            }
            func patch(_ id: String, _ attributes: JSONValue?, timezone: String?? = .none, locale: String?? = .none)
                -> SubscriberBatches.Patch
            {
                SubscriberBatches.Patch(
                    key: .init(tenant: tenant, id: id), attributes: attributes,
                    timezone: timezone ?? nil, locale: locale ?? nil,
                    hasTimezone: timezone != nil, hasLocale: locale != nil)
            }
            typealias Expected = (attributes: JSONValue, timezone: JSONValue, locale: JSONValue, inserted: Bool)
            let cases: [(SubscriberBatches.Patch, Expected)] = [
                (patch("old-a", ["x": 1]), (["keep": "yes", "drop": 1, "x": 1], "Europe/Berlin", "de-DE", false)),
                (patch("old-b", nil, timezone: .some(nil)), (["keep": "yes", "drop": 1], nil, "de-DE", false)),
                (
                    patch("old-c", ["drop": nil, "n": ["deep": nil]]),
                    (["keep": "yes", "n": ["deep": nil]], "Europe/Berlin", "de-DE", false)
                ),
                (
                    patch("old-d", ["x": 2], locale: "en-US"),
                    (["keep": "yes", "drop": 1, "x": 2], "Europe/Berlin", "en-US", false)
                ),
                (patch("new-e", ["x": 3, "n": ["deep": nil]]), (["x": 3, "n": ["deep": nil]], nil, nil, true)),
                (patch("new-f", ["gone": nil, "y": 1], timezone: "Asia/Tokyo"), (["y": 1], "Asia/Tokyo", nil, true)),
                (patch("new-g", nil), ([:], nil, nil, true)),
                (patch("new-h", ["gone": nil], locale: "fr-FR"), ([:], nil, "fr-FR", true)),
                (
                    patch("new-i", ["z": true], timezone: "Asia/Tokyo", locale: .some(nil)),
                    (["z": true], "Asia/Tokyo", nil, true)
                )
            ]
            #expect(Set(cases.compactMap { $0.0.shape }).count == 4, "the batch covers several shapes")
            #expect(cases.filter { $0.0.shape == nil }.count == 3, "and the general statement")
            let results = await SubscriberBatches.write(cases.map(\.0), h.postgres)
            #expect(results.count == cases.count)
            for ((patch, expected), result) in zip(cases, results) {
                let written = try result.get()
                let answer = try JSONValue.parse(written.json)
                let id = patch.key.id
                #expect(answer["id"] == .string(id))
                #expect(answer["attributes"] == expected.attributes, "\(id): \(answer)")
                #expect(answer["timezone"] == expected.timezone, "\(id)")
                #expect(answer["locale"] == expected.locale, "\(id)")
                #expect(written.inserted == expected.inserted, "\(id)")
                let read = await withCheckedContinuation { continuation in
                    SubscriberBatches.read([patch.key], h.postgres) { continuation.resume(returning: $0) }
                }
                let stored = try #require(try read.first?.get())
                #expect(try JSONValue.parse(stored) == answer, "\(id): the stored row is the answer")
            }
        }
    }
}
