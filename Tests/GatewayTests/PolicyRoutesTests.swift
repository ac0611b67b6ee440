import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// Categories, the policy settings and subscribers' preferences through the gateway (issue 26),
/// against the real Postgres.
@Suite("Send policy routes", .requiresTestStack)
struct PolicyRoutesTests {
    /// The paths of a 422's issues.
    static func paths(_ reply: Reply) -> Set<String> {
        Set((reply.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue })
    }

    @Test func categoriesAreCreatedReadListedAndDeletedWithTheirScopes() async throws {
        try await withGateway { h in
            let created = try await h.send(
                "PUT", "/v1/categories/marketing", key: h.tenantKey,
                body: ["name": "Marketing", "description": "Offers", "defaultEnabled": false])
            #expect(created.status == 201, "\(created.envelope)")
            #expect(created.data?["defaultEnabled"] == false && created.data?["critical"] == false)
            let replaced = try await h.send(
                "PUT", "/v1/categories/marketing", key: h.tenantKey, body: ["name": "Promotions"])
            #expect(replaced.status == 200 && replaced.data?["name"] == "Promotions")
            #expect(replaced.data?["defaultEnabled"] == true && replaced.data?["description"] == .null)
            #expect(
                try await h.send(
                    "PUT", "/v1/categories/security", key: h.tenantKey, body: ["name": "Security", "critical": true]
                ).status == 201)
            let list = try await h.send("GET", "/v1/categories?limit=1", key: h.tenantKey)
            #expect(list.items.compactMap { $0["key"]?.stringValue } == ["marketing"])
            let cursor = try #require(list.envelope.metadata["cursor"]?.stringValue)
            let rest = try await h.send("GET", "/v1/categories?limit=1&cursor=\(cursor)", key: h.tenantKey)
            #expect(rest.items.compactMap { $0["key"]?.stringValue } == ["security"])
            #expect(try await h.send("GET", "/v1/categories/security", key: h.tenantKey).data?["critical"] == true)

            let bad = try await h.send(
                "PUT", "/v1/categories/x", key: h.tenantKey, body: ["name": "", "critical": "yes", "other": 1])
            #expect(bad.status == 422 && Self.paths(bad) == ["name", "critical", "other"], "\(bad.envelope)")

            let reader = try await h.createKey(scopes: ["settings:read"], tenant: h.tenantID)
            #expect(try await h.send("GET", "/v1/categories", key: reader).status == 200)
            let refused = try await h.send("PUT", "/v1/categories/x", key: reader, body: ["name": "X"])
            #expect(refused.status == 403 && refused.code == "forbidden_scope")
            #expect(refused.envelope.error?.details?["scope"] == "settings:write")
            let workflowsOnly = try await h.createKey(scopes: ["workflows:read"], tenant: h.tenantID)
            #expect(try await h.send("GET", "/v1/categories", key: workflowsOnly).code == "forbidden_scope")

            let deleted = try await h.send("DELETE", "/v1/categories/security", key: h.tenantKey)
            #expect(deleted.status == 200 && deleted.data?["deleted"] == true)
            #expect(try await h.send("GET", "/v1/categories/security", key: h.tenantKey).status == 404)
            #expect(try await h.send("DELETE", "/v1/categories/security", key: h.tenantKey).data?["deleted"] == false)
        }
    }

    /// A category an enabled workflow sends in, the default category or one a cap counts is not
    /// deleted (409, saying where it is used); once nothing uses it, it goes.
    @Test func aCategoryInUseIsNotDeleted() async throws {
        try await withGateway { h in
            #expect(
                try await h.send("PUT", "/v1/categories/news", key: h.tenantKey, body: ["name": "News"]).status == 201)
            let workflow: JSONValue = [
                "trigger": ["event": "signed.up"],
                "steps": [["name": "hello", "send": ["title": "Hi", "category": "news"]]]
            ]
            // A send step naming a category the tenant does not have: 422 at its path, nothing saved.
            let unknown = try await h.send(
                "PUT", "/v1/workflows/welcome", key: h.tenantKey,
                body: [
                    "trigger": ["event": "signed.up"],
                    "steps": [
                        ["name": "hello", "send": ["title": "Hi", "category": "news"]],
                        ["name": "later", "send": ["title": "Hi", "category": "nope"]]
                    ]
                ])
            #expect(unknown.status == 422 && Self.paths(unknown) == ["steps[1].send.category"], "\(unknown.envelope)")
            #expect(try await h.send("GET", "/v1/workflows/welcome", key: h.tenantKey).status == 404)
            let saved = try await h.send("PUT", "/v1/workflows/welcome", key: h.tenantKey, body: workflow)
            #expect(saved.status == 201, "\(saved.envelope)")
            let refused = try await h.send("DELETE", "/v1/categories/news", key: h.tenantKey)
            #expect(refused.status == 409 && refused.code == "category_in_use", "\(refused.envelope)")
            #expect(refused.envelope.error?.details?["usedBy"] == [["kind": "workflow", "key": "welcome"]])
            #expect(try await h.send("GET", "/v1/categories/news", key: h.tenantKey).status == 200)

            #expect(try await h.send("POST", "/v1/workflows/welcome/disable", key: h.tenantKey).status == 200)
            let settings = try await h.send(
                "PATCH", "/v1/settings", key: h.tenantKey,
                body: ["defaultCategory": "news", "frequencyCaps": [["category": "news", "limit": 2, "window": "1d"]]])
            #expect(settings.status == 200, "\(settings.envelope)")
            let stillUsed = try await h.send("DELETE", "/v1/categories/news", key: h.tenantKey)
            #expect(
                stillUsed.envelope.error?.details?["usedBy"] == [
                    ["kind": "defaultCategory"], ["kind": "frequencyCap", "index": 0]
                ])
            #expect(
                try await h.send(
                    "PATCH", "/v1/settings", key: h.tenantKey, body: ["defaultCategory": nil, "frequencyCaps": []]
                ).status == 200)
            let gone = try await h.send("DELETE", "/v1/categories/news", key: h.tenantKey)
            #expect(gone.status == 200 && gone.data?["deleted"] == true)
        }
    }

    /// Every bad field of the policy settings at once, each with its path; nothing is written then.
    @Test func settingsValidateEveryCapAndWriteNothingHalfWay() async throws {
        try await withGateway { h in
            #expect(
                try await h.send("PUT", "/v1/categories/news", key: h.tenantKey, body: ["name": "News"]).status == 201)
            let good = try await h.send(
                "PATCH", "/v1/settings", key: h.tenantKey,
                body: [
                    "defaultCategory": "news",
                    "frequencyCaps": [["limit": 5, "window": "1d"], ["category": "news", "limit": 1, "window": "1h"]]
                ])
            #expect(good.status == 200, "\(good.envelope)")
            #expect(good.data?["defaultCategory"] == "news")
            #expect(
                good.data?["frequencyCaps"] == [
                    ["category": nil, "limit": 5, "window": "1d"], ["category": "news", "limit": 1, "window": "1h"]
                ])
            let bad = try await h.send(
                "PATCH", "/v1/settings", key: h.tenantKey,
                body: [
                    "frequencyCaps": [
                        ["limit": 0, "window": "1d"], ["limit": 3, "window": "2h"],
                        ["category": "nope", "limit": 1, "window": "7d"], ["limit": 1, "window": "1h", "x": 1]
                    ]
                ])
            #expect(bad.status == 422 && bad.code == "validation_failed")
            #expect(
                Self.paths(bad) == [
                    "frequencyCaps[0].limit", "frequencyCaps[1].window", "frequencyCaps[3].x"
                ], "\(bad.envelope)")
            // An unknown category is found in the transaction, after the quiet hours were written:
            // the whole change is rolled back.
            let unknown = try await h.send(
                "PATCH", "/v1/settings", key: h.tenantKey,
                body: [
                    "quietHours": ["start": "22:00", "end": "07:00"], "defaultCategory": "missing",
                    "frequencyCaps": [["category": "nope", "limit": 1, "window": "7d"]]
                ])
            #expect(unknown.status == 422 && Self.paths(unknown) == ["defaultCategory", "frequencyCaps[0].category"])
            let after = try await h.send("GET", "/v1/settings", key: h.tenantKey)
            #expect(after.data?["quietHours"] == .null && after.data?["defaultCategory"] == "news")
            #expect(after.data?["frequencyCaps"]?.arrayValue?.count == 2)
            let tooMany = try await h.send(
                "PATCH", "/v1/settings", key: h.tenantKey,
                body: ["frequencyCaps": .array(Array(repeating: ["limit": 1, "window": "1h"], count: 11))])
            #expect(tooMany.status == 422 && Self.paths(tooMany) == ["frequencyCaps"])
            // A critical push is never capped: a cap cannot name a critical category, and a
            // category a cap counts cannot become critical.
            #expect(
                try await h.send(
                    "PUT", "/v1/categories/alerts", key: h.tenantKey, body: ["name": "Alerts", "critical": true]
                ).status == 201)
            let criticalCap = try await h.send(
                "PATCH", "/v1/settings", key: h.tenantKey,
                body: ["frequencyCaps": [["category": "alerts", "limit": 1, "window": "1d"]]])
            #expect(
                criticalCap.status == 422 && Self.paths(criticalCap) == ["frequencyCaps[0].category"],
                "\(criticalCap.envelope)")
            let madeCritical = try await h.send(
                "PUT", "/v1/categories/news", key: h.tenantKey, body: ["name": "News", "critical": true])
            #expect(madeCritical.status == 409 && madeCritical.code == "category_in_use", "\(madeCritical.envelope)")
            #expect(madeCritical.envelope.error?.details?["usedBy"] == [["kind": "frequencyCap", "index": 1]])
            let news = try await h.send("GET", "/v1/categories/news", key: h.tenantKey)
            #expect(news.data?["critical"] == false)
            #expect(
                try await h.send("GET", "/v1/settings", key: h.tenantKey).data?["frequencyCaps"]?.arrayValue?.count
                    == 2)
        }
    }

    @Test func preferencesKeepWhatAPutDoesNotNameAndEveryChangeInTheHistory() async throws {
        try await withGateway { h in
            for (key, enabled) in [("news", true), ("offers", false), ("security", true)] {
                var body: [String: JSONValue] = ["name": .string(key), "defaultEnabled": .bool(enabled)]
                if key == "security" { body["critical"] = true }
                #expect(
                    try await h.send("PUT", "/v1/categories/\(key)", key: h.tenantKey, body: .object(body)).status
                        == 201)
            }
            #expect(try await h.send("PUT", "/v1/subscribers/alice", key: h.tenantKey, body: [:]).status == 201)
            let fresh = try await h.send("GET", "/v1/subscribers/alice/preferences", key: h.tenantKey)
            #expect(fresh.status == 200 && fresh.data?["all"] == true && fresh.data?["categories"] == [:])
            #expect(fresh.data?["updatedAt"] == .null)
            let effective = Dictionary(
                uniqueKeysWithValues: (fresh.data?["effective"]?.arrayValue ?? []).compactMap { item in
                    item["key"]?.stringValue.map { ($0, item["enabled"]) }
                })
            #expect(effective == ["news": true, "offers": false, "security": true])

            let first = try await h.send(
                "PUT", "/v1/subscribers/alice/preferences", key: h.tenantKey,
                body: ["categories": ["offers": true, "news": false]])
            #expect(first.status == 200 && first.data?["changed"] == true, "\(first.envelope)")
            #expect(first.data?["categories"] == ["offers": true, "news": false])
            let second = try await h.send(
                "PUT", "/v1/subscribers/alice/preferences", key: h.tenantKey,
                body: ["all": false, "source": "dashboard"])
            #expect(second.data?["all"] == false && second.data?["categories"] == ["offers": true, "news": false])
            let security = (second.data?["effective"]?.arrayValue ?? []).first { $0["key"] == "security" }
            #expect(security?["enabled"] == true)  // critical: always
            let same = try await h.send(
                "PUT", "/v1/subscribers/alice/preferences", key: h.tenantKey, body: ["all": false])
            #expect(same.data?["changed"] == false)

            let unknown = try await h.send(
                "PUT", "/v1/subscribers/alice/preferences", key: h.tenantKey,
                body: ["all": true, "categories": ["nope": true, "news": true]])
            #expect(unknown.status == 422 && Self.paths(unknown) == ["categories.nope"])
            let badShape = try await h.send(
                "PUT", "/v1/subscribers/alice/preferences", key: h.tenantKey,
                body: ["all": "no", "categories": ["news": 1], "source": "sdk"])
            #expect(badShape.status == 422 && Self.paths(badShape) == ["all", "categories.news", "source"])
            // Nothing of the refused changes was written.
            let now = try await h.send("GET", "/v1/subscribers/alice/preferences", key: h.tenantKey)
            #expect(now.data?["all"] == false && now.data?["categories"] == ["offers": true, "news": false])

            let history = try await h.send("GET", "/v1/subscribers/alice/preferences/history", key: h.tenantKey)
            #expect(history.items.count == 2)
            #expect(history.items.first?["source"] == "dashboard")
            #expect(history.items.first?["all"] == ["from": nil, "to": false])
            #expect(history.items.last?["source"] == "api")
            #expect(
                history.items.last?["categories"] == [
                    "offers": ["from": nil, "to": true], "news": ["from": nil, "to": false]
                ])
            let paged = try await h.send(
                "GET", "/v1/subscribers/alice/preferences/history?limit=1", key: h.tenantKey)
            #expect(paged.items.count == 1 && paged.envelope.metadata["hasMore"] == true)

            #expect(try await h.send("GET", "/v1/subscribers/bob/preferences", key: h.tenantKey).status == 404)
            #expect(
                try await h.send("PUT", "/v1/subscribers/bob/preferences", key: h.tenantKey, body: ["all": false])
                    .status == 404)
            #expect(
                try await h.send("GET", "/v1/subscribers/bob/preferences/history", key: h.tenantKey).status == 404)

            // null takes a choice back: the category follows its default again (offers: off by
            // default), recorded with `to: null`; a second reset, or one of a category never
            // chosen, changes nothing; an unknown category is 422 as ever.
            let reset = try await h.send(
                "PUT", "/v1/subscribers/alice/preferences", key: h.tenantKey,
                body: ["categories": ["offers": nil, "security": nil]])
            #expect(reset.status == 200 && reset.data?["changed"] == true, "\(reset.envelope)")
            #expect(reset.data?["categories"] == ["news": false])
            let offers = (reset.data?["effective"]?.arrayValue ?? []).first { $0["key"] == "offers" }
            #expect(offers?["chosen"] == false && offers?["enabled"] == false)
            let after = try await h.send(
                "GET", "/v1/subscribers/alice/preferences/history?limit=1", key: h.tenantKey)
            #expect(after.items.first?["categories"] == ["offers": ["from": true, "to": nil]])
            let again = try await h.send(
                "PUT", "/v1/subscribers/alice/preferences", key: h.tenantKey, body: ["categories": ["offers": nil]])
            #expect(again.status == 200 && again.data?["changed"] == false)
            let unknownReset = try await h.send(
                "PUT", "/v1/subscribers/alice/preferences", key: h.tenantKey, body: ["categories": ["nope": nil]])
            #expect(unknownReset.status == 422 && Self.paths(unknownReset) == ["categories.nope"])
        }
    }

    /// A client key reads and changes its own subscriber's preferences only with the signature the
    /// tenant's backend made; another subscriber's id, its own without a signature or with a wrong
    /// one, are refused, and nothing is written.
    @Test func aClientKeyNeedsItsSubscribersSignature() async throws {
        try await withGateway { h in
            #expect(
                try await h.send("PUT", "/v1/categories/news", key: h.tenantKey, body: ["name": "News"]).status == 201)
            for id in ["alice", "bob"] {
                #expect(try await h.send("PUT", "/v1/subscribers/\(id)", key: h.tenantKey, body: [:]).status == 201)
            }
            let installation = try await h.registerInstallation("anon-alice")
            let identified = try await h.send(
                "POST", "/v1/identify", key: h.clientKey, body: ["anonymousId": "anon-alice", "subscriberId": "alice"],
                installation: installation)
            #expect(identified.status == 200, "\(identified.envelope)")

            // No identity secret yet: nothing verifies.
            let fake = SubscriberSignature.sign("alice", secret: "bk_is_guess")
            let before = try await h.send(
                "GET", "/v1/subscribers/alice/preferences", key: h.clientKey, installation: installation,
                headers: [SubscriberSignature.header: fake])
            #expect(before.status == 403 && before.code == "forbidden_subscriber")

            let made = try await h.send("POST", "/v1/settings/identity-secret", key: h.tenantKey)
            #expect(made.status == 201, "\(made.envelope)")
            let secret = try #require(made.data?["secret"]?.stringValue)
            #expect(secret.hasPrefix("bk_is_"))
            let settings = try await h.send("GET", "/v1/settings", key: h.tenantKey)
            #expect(settings.data?["identityVerification"]?["configured"] == true)
            #expect(String(decoding: (settings.data ?? .null).jsonBytes, as: UTF8.self).contains(secret) == false)

            let alice = SubscriberSignature.sign("alice", secret: secret)
            let bob = SubscriberSignature.sign("bob", secret: secret)
            func get(_ id: String, _ signature: String?) async throws -> Reply {
                try await h.send(
                    "GET", "/v1/subscribers/\(id)/preferences", key: h.clientKey, installation: installation,
                    headers: signature.map { [SubscriberSignature.header: $0] } ?? [:])
            }
            func put(_ id: String, _ signature: String?) async throws -> Reply {
                try await h.send(
                    "PUT", "/v1/subscribers/\(id)/preferences", key: h.clientKey, body: ["all": false],
                    installation: installation, headers: signature.map { [SubscriberSignature.header: $0] } ?? [:])
            }
            #expect(try await get("alice", nil).code == "forbidden_subscriber")
            #expect(try await get("alice", bob).code == "forbidden_subscriber")
            #expect(try await get("alice", String(repeating: "0", count: 64)).code == "forbidden_subscriber")
            #expect(try await put("alice", nil).code == "forbidden_subscriber")
            // Another subscriber's id, even with that subscriber's valid signature: not this installation's.
            #expect(try await get("bob", bob).code == "forbidden_installation")
            #expect(try await put("bob", bob).code == "forbidden_installation")
            #expect(try await put("bob", alice).status == 403)

            let read = try await get("alice", alice)
            #expect(read.status == 200 && read.data?["all"] == true, "\(read.envelope)")
            let changed = try await put("alice", alice.uppercased())
            #expect(changed.status == 200 && changed.data?["all"] == false, "\(changed.envelope)")
            let history = try await h.send("GET", "/v1/subscribers/alice/preferences/history", key: h.tenantKey)
            #expect(history.items.map { $0["source"] } == ["sdk"])
            let bobs = try await h.send("GET", "/v1/subscribers/bob/preferences", key: h.tenantKey)
            #expect(bobs.data?["all"] == true)
            // A client key may not name the source, nor read the history.
            let named = try await h.send(
                "PUT", "/v1/subscribers/alice/preferences", key: h.clientKey,
                body: ["all": true, "source": "dashboard"], installation: installation,
                headers: [SubscriberSignature.header: alice])
            #expect(named.status == 422 && Self.paths(named) == ["source"])
            let clientHistory = try await h.send(
                "GET", "/v1/subscribers/alice/preferences/history", key: h.clientKey, installation: installation)
            #expect(clientHistory.status == 403)

            // identify verifies a signature when one is given.
            let wrong = try await h.send(
                "POST", "/v1/identify", key: h.clientKey,
                body: ["anonymousId": "anon-alice", "subscriberId": "alice", "signature": .string(bob)],
                installation: installation)
            #expect(wrong.status == 403 && wrong.code == "forbidden_subscriber")
            let right = try await h.send(
                "POST", "/v1/identify", key: h.clientKey,
                body: ["anonymousId": "anon-alice", "subscriberId": "alice", "signature": .string(alice)],
                installation: installation)
            #expect(right.status == 200)

            // A rotation: the previous secret still verifies during the overlap, the new one too.
            let rotated = try await h.send("POST", "/v1/settings/identity-secret", key: h.tenantKey)
            let newSecret = try #require(rotated.data?["secret"]?.stringValue)
            #expect(newSecret != secret && rotated.data?["previousValidUntil"] != .null)
            #expect(try await get("alice", alice).status == 200)
            #expect(try await get("alice", SubscriberSignature.sign("alice", secret: newSecret)).status == 200)
        }
    }
}
