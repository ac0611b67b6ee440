import BuzzKitContracts
import BuzzKitCore
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import IngestApp
import Testing

/// `POST /v1/events` through the real gateway, consumed by the real ingest service into Postgres,
/// read back through `GET /v1/subscribers/{id}/events`.
@Suite("Events end to end", .requiresTestStack)
struct EventsEndToEndTests {
    /// Runs the ingest service on the harness's schema and ingest stream while `body` runs.
    func withIngest(_ h: GatewayHarness, _ body: () async throws -> Void) async throws {
        var configuration = IngestConfiguration(consumerName: "e2e")
        configuration.ingestStream = h.gateway.configuration.ingestStream
        configuration.eventsStream = StreamName("bk:test:\(h.schema):events")
        let services = IngestService.makeServices(
            postgres: h.postgres, redis: h.redis, configuration: configuration,
            logger: .silent(), metrics: MetricsRegistry())
        try await withRunning(services, body)
    }

    func batch(_ identity: (String, String), ids: Range<Int>, prefix: String, name: String = "workout.completed")
        -> JSONValue
    {
        .object([
            identity.0: .string(identity.1),
            "events": .array(
                ids.map { n in
                    [
                        "id": .string("\(prefix)-\(n)"), "name": .string(name), "data": ["n": .int(Int64(n))],
                        "timestamp": "2026-11-20T10:00:00Z"
                    ]
                })
        ])
    }

    /// Polls the subscriber's events until `count` are there (the ingest service is asynchronous).
    func events(_ h: GatewayHarness, _ subscriber: String, count: Int) async throws -> [JSONValue] {
        var all: [JSONValue] = []
        let deadline = ContinuousClock.now + .seconds(20)
        repeat {
            all = []
            var cursor: String?
            repeat {
                let query = "limit=200" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await h.send("GET", "/v1/subscribers/\(subscriber)/events?\(query)", key: h.tenantKey)
                #expect(page.status == 200, "\(page.envelope)")
                all += page.items
                cursor = page.envelope.metadata["hasMore"] == true ? page.envelope.metadata["cursor"]?.stringValue : nil
            } while cursor != nil
            if all.count >= count { return all }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        return all
    }

    @Test func aBatchOf100IsStoredOnceEvenWhenSentTwice() async throws {
        try await withGateway { h in
            try await withIngest(h) {
                #expect(try await h.send("PUT", "/v1/subscribers/runner", key: h.tenantKey, body: [:]).status == 201)
                let body = batch(("subscriberId", "runner"), ids: 0..<100, prefix: "e")
                let first = try await h.send("POST", "/v1/events", key: h.tenantKey, body: body)
                #expect(first.status == 202)
                #expect(first.data?["accepted"] == 100)
                let retry = try await h.send("POST", "/v1/events", key: h.tenantKey, body: body)
                #expect(retry.status == 202)
                let stored = try await events(h, "runner", count: 100)
                try await Task.sleep(for: .milliseconds(300))  // a duplicate would land by now
                let again = try await events(h, "runner", count: 100)
                #expect(stored.count == 100)
                #expect(again.count == 100)
                #expect(Set(again.compactMap { $0["id"]?.stringValue }).count == 100)
                #expect(again.first?["data"]?["n"] != nil)
            }
        }
    }

    @Test func anIdRepeatedInABatchIsOneEventTheFirst() async throws {
        try await withGateway { h in
            try await withIngest(h) {
                #expect(try await h.send("PUT", "/v1/subscribers/twice", key: h.tenantKey, body: [:]).status == 201)
                let body: JSONValue = [
                    "subscriberId": "twice",
                    "events": [
                        ["id": "same", "name": "first", "timestamp": "2026-11-20T10:00:00Z"],
                        ["id": "other", "name": "second", "timestamp": "2026-11-20T10:00:01Z"],
                        ["id": "same", "name": "third", "timestamp": "2026-11-20T10:00:02Z"]
                    ]
                ]
                let reply = try await h.send("POST", "/v1/events", key: h.tenantKey, body: body)
                #expect(reply.status == 202, "\(reply.envelope)")
                #expect(reply.data?["accepted"] == 2)
                let stored = try await events(h, "twice", count: 2)
                try await Task.sleep(for: .milliseconds(300))  // a third would land by now
                let again = try await events(h, "twice", count: 2)
                #expect(stored.count == 2 && again.count == 2)
                #expect(Set(again.compactMap { $0["name"]?.stringValue }) == ["first", "second"])
            }
        }
    }

    @Test func a101EventBatchAndBadEventsAreRejectedWithTheirIndexes() async throws {
        try await withGateway { h in
            let tooMany = batch(("subscriberId", "s"), ids: 0..<101, prefix: "x")
            let rejected = try await h.send("POST", "/v1/events", key: h.tenantKey, body: tooMany)
            #expect(rejected.status == 422)
            #expect(rejected.code == "batch_too_large")

            let bad: JSONValue = [
                "subscriberId": "s",
                "events": [
                    ["id": "ok-0", "name": "fine", "timestamp": "2026-11-20T10:00:00Z"],
                    ["id": "bad-1", "name": "", "timestamp": "2026-11-20T10:00:00Z"],
                    [
                        "id": "bad-2", "name": "$notification.opened", "data": ["action": "x"],
                        "timestamp": "2026-11-20T10:00:00Z"
                    ],
                    [
                        "id": "bad-3", "name": .string(String(repeating: "a", count: 129)),
                        "timestamp": "2026-11-20T10:00:00Z"
                    ]
                ]
            ]
            let reply = try await h.send("POST", "/v1/events", key: h.tenantKey, body: bad)
            #expect(reply.status == 422)
            #expect(reply.code == "validation_failed")
            let indexes = Set(
                (reply.envelope.error?.details?.arrayValue ?? reply.envelope.error?.details?["issues"]?.arrayValue ?? [])
                    .compactMap { $0["index"]?.intValue })
            #expect(indexes == [1, 2, 3], "\(reply.envelope.error?.details?.jsonString ?? "")")
        }
    }

    @Test func eventsBeforeAndAfterIdentifyBelongToTheSubscriber() async throws {
        try await withGateway { h in
            try await withIngest(h) {
                let installation = try await h.registerInstallation("anon-42")
                let before = batch(("anonymousId", "anon-42"), ids: 0..<3, prefix: "before")
                #expect(
                    try await h.send("POST", "/v1/events", key: h.clientKey, body: before, installation: installation)
                        .status == 202)
                let identify = try await h.send(
                    "POST", "/v1/identify", key: h.clientKey,
                    body: ["anonymousId": "anon-42", "subscriberId": "user-42"],
                    installation: installation)
                #expect(identify.status == 200 || identify.status == 201, "\(identify.envelope)")
                let after = batch(("anonymousId", "anon-42"), ids: 0..<2, prefix: "after")
                #expect(
                    try await h.send("POST", "/v1/events", key: h.clientKey, body: after, installation: installation)
                        .status == 202)
                let direct = batch(("subscriberId", "user-42"), ids: 0..<1, prefix: "direct")
                #expect(try await h.send("POST", "/v1/events", key: h.tenantKey, body: direct).status == 202)
                let all = try await events(h, "user-42", count: 6)
                #expect(
                    Set(all.compactMap { $0["id"]?.stringValue })
                        == ["before-0", "before-1", "before-2", "after-0", "after-1", "direct-0"])
            }
        }
    }

    @Test func clientKeysCanTrackButNotRead() async throws {
        try await withGateway { h in
            #expect(try await h.send("PUT", "/v1/subscribers/s1", key: h.tenantKey, body: [:]).status == 201)
            let installation = try await h.registerInstallation("anon-s1")
            let tracked = try await h.send(
                "POST", "/v1/events", key: h.clientKey,
                body: batch(("anonymousId", "anon-s1"), ids: 0..<1, prefix: "c"),
                installation: installation)
            #expect(tracked.status == 202)
            let read = try await h.send(
                "GET", "/v1/subscribers/s1/events", key: h.clientKey, installation: installation)
            #expect(read.status == 403)
            #expect(read.code == "forbidden_scope")
        }
    }
}
