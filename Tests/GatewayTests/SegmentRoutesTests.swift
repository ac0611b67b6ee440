import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Saved segments and the audience preview through the gateway.
@Suite("Segments", .requiresTestStack)
struct SegmentRoutesTests {
    @Test func saveCountListPreviewAndDelete() async throws {
        try await withGateway { h in
            for n in 0..<12 {
                let plan: JSONValue = n % 3 == 0 ? "pro" : "free"
                let reply = try await h.send(
                    "PUT", "/v1/subscribers/u\(n)", key: h.tenantKey,
                    body: ["attributes": ["plan": plan, "visits": .int(Int64(n))]])
                #expect(reply.status == 201)
            }
            let saved = try await h.send(
                "PUT", "/v1/segments/pro", key: h.tenantKey,
                body: ["name": "Pro users", "where": "plan == \"pro\""])
            #expect(saved.status == 201, "\(saved.envelope)")
            let again = try await h.send(
                "PUT", "/v1/segments/pro", key: h.tenantKey,
                body: ["name": "Pro users", "where": "plan == \"pro\" and visits >= 3"])
            #expect(again.status == 200)
            #expect(
                try await h.send("GET", "/v1/segments/pro", key: h.tenantKey).data?["where"]
                    == "plan == \"pro\" and visits >= 3")

            let count = try await h.send("GET", "/v1/segments/pro/count", key: h.tenantKey)
            #expect(count.data?["count"] == 3)  // u3, u6, u9
            var ids: [String] = []
            var cursor: String?
            repeat {
                let page = try await h.send(
                    "GET", "/v1/segments/pro/subscribers?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""),
                    key: h.tenantKey)
                #expect(page.status == 200)
                ids += page.items.compactMap {
                    $0["id"]?.stringValue ?? $0["subscriberId"]?.stringValue ?? $0.stringValue
                }
                cursor = page.envelope.metadata["hasMore"] == true ? page.envelope.metadata["cursor"]?.stringValue : nil
            } while cursor != nil
            #expect(Set(ids) == ["u3", "u6", "u9"])

            let preview = try await h.send(
                "POST", "/v1/audience/preview", key: h.tenantKey, body: ["where": "visits < 2"])
            #expect(preview.status == 200)
            #expect(preview.data?["count"] == 2)

            let broken = try await h.send(
                "PUT", "/v1/segments/bad", key: h.tenantKey,
                body: ["name": "Bad", "where": "plan ==\n  and"])
            #expect(broken.status == 422)
            #expect(broken.code == "validation_failed")
            let issue = broken.envelope.error?.details?.arrayValue?.first
            #expect(issue?["line"] == 2, "\(String(describing: broken.envelope.error))")
            #expect(issue?["column"] != nil)

            #expect(try await h.send("DELETE", "/v1/segments/pro", key: h.tenantKey).status == 200)
            #expect(try await h.send("GET", "/v1/segments/pro", key: h.tenantKey).status == 404)
            // Another tenant's key never sees the segment (the tenancy table test covers every route).
            let readOnly = try await h.createKey(scopes: ["subscribers:read"], tenant: h.tenantID)
            let refused = try await h.send(
                "PUT", "/v1/segments/x", key: readOnly, body: ["name": "x", "where": "plan == \"x\""])
            #expect(refused.status == 403 && refused.code == "forbidden_scope")
        }
    }

    @Test func listSegmentsInKeyOrderByCursor() async throws {
        try await withGateway { h in
            // Keys chosen so byte order differs from a case-insensitive or natural order.
            let keys = ["b-2", "B-1", "a", "a-10", "a-9", "z"]
            for key in keys {
                let saved = try await h.send(
                    "PUT", "/v1/segments/\(key)", key: h.tenantKey,
                    body: ["name": .string("Segment \(key)"), "where": .string("plan == \"\(key)\"")])
                #expect(saved.status == 201, "\(saved.envelope)")
            }
            // Another tenant's segments never show up in this tenant's list.
            let other = try await h.createTenant("segments-other")
            #expect(
                try await h.send(
                    "PUT", "/v1/segments/a-0", key: other.key, body: ["name": "x", "where": "plan == \"x\""]
                ).status == 201)

            var listed: [JSONValue] = []
            var cursor: String?
            var pages = 0
            repeat {
                let page = try await h.send(
                    "GET", "/v1/segments?limit=4" + (cursor.map { "&cursor=\($0)" } ?? ""), key: h.tenantKey)
                #expect(page.status == 200, "\(page.envelope)")
                #expect(page.items.count <= 4)
                listed += page.items
                pages += 1
                cursor = page.envelope.metadata["hasMore"] == true ? page.envelope.metadata["cursor"]?.stringValue : nil
            } while cursor != nil && pages < 10
            #expect(pages == 2)
            #expect(
                listed.compactMap { $0["key"]?.stringValue }
                    == keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            let a9 = listed.first { $0["key"] == "a-9" }
            #expect(a9?["name"] == "Segment a-9")
            #expect(a9?["where"] == "plan == \"a-9\"")
            #expect(a9?["createdAt"]?.stringValue != nil && a9?["updatedAt"]?.stringValue != nil)

            let otherList = try await h.send("GET", "/v1/segments", key: other.key)
            #expect(otherList.items.compactMap { $0["key"]?.stringValue } == ["a-0"])
            #expect(otherList.envelope.metadata["hasMore"] == false)

            // subscribers:read is enough to list; a key without it is refused.
            let reader = try await h.createKey(scopes: ["subscribers:read"], tenant: h.tenantID)
            #expect(try await h.send("GET", "/v1/segments", key: reader).items.count == 6)
            let sender = try await h.createKey(scopes: ["messages:send"], tenant: h.tenantID)
            let refused = try await h.send("GET", "/v1/segments", key: sender)
            #expect(refused.status == 403 && refused.code == "forbidden_scope")
            let badCursor = try await h.send("GET", "/v1/segments?cursor=nope", key: h.tenantKey)
            #expect(badCursor.status == 422 && badCursor.code == "validation_failed")
        }
    }
}
