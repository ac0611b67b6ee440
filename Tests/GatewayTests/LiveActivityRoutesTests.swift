import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// The Live Activity token registry through the real gateway and Postgres.
@Suite("Gateway Live Activity token routes", .requiresTestStack)
struct LiveActivityRoutesTests {
    @Test func registrationIsAnIdempotentUpsertAndARotationReplacesTheToken() async throws {
        try await withGateway { h in
            let first = deviceToken("la-1")
            let second = deviceToken("la-2")
            let body: JSONValue = [
                "attributesType": "MatchAttributes", "token": .string(first.uppercased()),
                "environment": "sandbox", "bundleId": "com.example.app"
            ]
            let created = try await h.send(
                "PUT", "/v1/subscribers/fan/live-activities/act-1", key: h.tenantKey, body: body)
            #expect(created.status == 201, "\(created.envelope)")
            #expect(created.data?["token"] == .string(first))  // stored lowercase
            #expect(created.data?["state"] == "active" && created.data?["tokenStatus"] == "active")
            let again = try await h.send(
                "PUT", "/v1/subscribers/fan/live-activities/act-1", key: h.tenantKey, body: body)
            #expect(again.status == 200 && again.data?["token"] == .string(first))

            let rotated = try await h.send(
                "PUT", "/v1/subscribers/fan/live-activities/act-1", key: h.tenantKey,
                body: [
                    "attributesType": "MatchAttributes", "token": .string(second),
                    "environment": "sandbox"
                ])
            #expect(rotated.status == 200 && rotated.data?["token"] == .string(second))
            let list = try await h.send("GET", "/v1/subscribers/fan/live-activities", key: h.tenantKey)
            #expect(list.status == 200)
            #expect(list.items.map { $0["token"]?.stringValue } == [second])
            #expect(
                list.items.first?["activityId"] == "act-1" && list.items.first?["attributesType"] == "MatchAttributes")
            let rows = try await h.postgres.query("SELECT count(*)::int FROM live_activities WHERE token = $1", [first])
            #expect(try rows.first?.decode(Int.self, at: 0) == 0)
        }
    }

    @Test func theDeviceEndingAnActivityIsFinalAndIdempotent() async throws {
        try await withGateway { h in
            let token = deviceToken("la-end")
            let body: JSONValue = ["attributesType": "T", "token": .string(token), "environment": "production"]
            #expect(
                try await h.send("PUT", "/v1/subscribers/ender/live-activities/a", key: h.tenantKey, body: body).status
                    == 201)
            let ended = try await h.send("DELETE", "/v1/subscribers/ender/live-activities/a", key: h.tenantKey)
            #expect(ended.status == 200 && ended.data == ["activityId": "a", "ended": true])
            let twice = try await h.send("DELETE", "/v1/subscribers/ender/live-activities/a", key: h.tenantKey)
            #expect(twice.status == 200 && twice.data?["ended"] == false)
            // Unknown activities are not 404 (the SDK would read that as "no Live Activity routes").
            let unknown = try await h.send("DELETE", "/v1/subscribers/ender/live-activities/never", key: h.tenantKey)
            #expect(unknown.status == 200 && unknown.data?["ended"] == false)
            // Registering it again does not revive it.
            let revived = try await h.send(
                "PUT", "/v1/subscribers/ender/live-activities/a", key: h.tenantKey, body: body)
            #expect(revived.status == 200 && revived.data?["state"] == "ended" && revived.data?["endedBy"] == "device")
            let list = try await h.send("GET", "/v1/subscribers/ender/live-activities", key: h.tenantKey)
            #expect(list.items.first?["state"] == "ended")
            #expect(list.items.first?["endedAt"]?.stringValue?.isEmpty == false)
        }
    }

    @Test func pushToStartTokensAreOnePerDeviceAndTypeAndRotate() async throws {
        try await withGateway { h in
            // Two installations of one subscriber (two devices) with a client key each.
            let a = try await h.registerInstallation("anon-a")
            let b = try await h.registerInstallation("anon-b")
            for (installation, anon) in [(a, "anon-a"), (b, "anon-b")] {
                let put = try await h.send(
                    "POST", "/v1/identify", key: h.clientKey,
                    body: ["anonymousId": .string(anon), "subscriberId": "starter"], installation: installation)
                #expect(put.status == 200)
            }
            let path = "/v1/subscribers/starter/live-activity-start-tokens/MatchAttributes"
            let one = try await h.send(
                "PUT", path, key: h.clientKey, body: ["token": .string(deviceToken("p1")), "environment": "sandbox"],
                installation: a)
            #expect(one.status == 201, "\(one.envelope)")
            let two = try await h.send(
                "PUT", path, key: h.clientKey, body: ["token": .string(deviceToken("p2")), "environment": "sandbox"],
                installation: b)
            #expect(two.status == 201)
            // Device A's token rotates: its row changes, B's stays.
            let rotated = try await h.send(
                "PUT", path, key: h.clientKey,
                body: ["token": .string(deviceToken("p1-new")), "environment": "sandbox"], installation: a)
            #expect(rotated.status == 200 && rotated.data?["token"] == .string(deviceToken("p1-new")))
            let list = try await h.send("GET", "/v1/subscribers/starter/live-activity-start-tokens", key: h.tenantKey)
            #expect(
                Set(list.items.compactMap { $0["token"]?.stringValue }) == [deviceToken("p1-new"), deviceToken("p2")])
            #expect(
                list.items.allSatisfy { $0["attributesType"] == "MatchAttributes" && $0["tokenStatus"] == "active" })
            // Re-registering the same token is idempotent.
            let same = try await h.send(
                "PUT", path, key: h.clientKey, body: ["token": .string(deviceToken("p2")), "environment": "sandbox"],
                installation: b)
            #expect(same.status == 200)
            // Another type is a row of its own.
            let other = try await h.send(
                "PUT", "/v1/subscribers/starter/live-activity-start-tokens/DeliveryAttributes",
                key: h.tenantKey, body: ["token": .string(deviceToken("p3")), "environment": "production"])
            #expect(other.status == 201)
            let all = try await h.send(
                "GET", "/v1/subscribers/starter/live-activity-start-tokens?limit=2", key: h.tenantKey)
            #expect(all.items.count == 2 && all.envelope.metadata["hasMore"] == true)
            let cursor = try #require(all.envelope.metadata["cursor"]?.stringValue)
            let rest = try await h.send(
                "GET", "/v1/subscribers/starter/live-activity-start-tokens?limit=2&cursor=\(cursor)",
                key: h.tenantKey)
            #expect(rest.items.count == 1 && rest.envelope.metadata["hasMore"] == false)
            #expect(Set((all.items + rest.items).compactMap { $0["token"]?.stringValue }).count == 3)
        }
    }

    @Test func badInputIsRefusedWithEveryProblemAndUnknownSubscribersAre404() async throws {
        try await withGateway { h in
            let bad = try await h.send(
                "PUT", "/v1/subscribers/x/live-activities/a", key: h.tenantKey,
                body: ["token": "zz", "environment": "moon", "extra": 1])
            #expect(bad.status == 422 && bad.code == "validation_failed")
            let paths = Set(bad.envelope.error?.details?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? [])
            #expect(paths == ["attributesType", "token", "environment", "extra"])
            let start = try await h.send(
                "PUT", "/v1/subscribers/x/live-activity-start-tokens/T", key: h.tenantKey, body: [:])
            #expect(start.status == 422)
            #expect(try await h.send("GET", "/v1/subscribers/nobody/live-activities", key: h.tenantKey).status == 404)
            #expect(
                try await h.send("GET", "/v1/subscribers/nobody/live-activity-start-tokens", key: h.tenantKey).status
                    == 404)
        }
    }
}
