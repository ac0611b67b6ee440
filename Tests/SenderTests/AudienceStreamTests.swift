import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The fan-out streams an expression audience through one server-side cursor, page by page
/// (`AudienceCursor`): with pages of 3 subscribers and chunks of 4 deliveries, a behaviour
/// expression (events, including ones stored under an aliased anonymous id) reaches exactly the
/// matching devices, once each, and the message records the audience it streamed.
@Suite("audience streaming into the fan-out", .serialized, .requiresTestStack)
struct AudienceStreamTests {
    @Test("a did/count audience streamed in many cursor pages reaches each matching device once")
    func streamedInPages() async throws {
        try await withPushStack(senderSettings: ["BUZZKIT_FANOUT_PAGE_SIZE": "6", "BUZZKIT_SENDER_CHUNK_SIZE": "4"]) {
            stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            var devices: [String: [String]] = [:]
            for n in 0..<40 {
                let id = String(format: "m%02d", n)
                let tokens = (0..<(n % 5 == 0 ? 2 : 1)).map { _ in PushStack.token() }
                try await stack.addSubscriber(id, tokens: tokens)
                devices[id] = tokens
            }
            // n % 3 events "app.opened" within the last day for m<n>; "anon-<n>" (aliased to m<n>)
            // adds one more for every n % 4 == 0: count >= 2 needs both sources for some.
            let tenant = stack.tenantID
            var opened: [String: Int] = [:]
            for n in 0..<40 {
                let id = String(format: "m%02d", n)
                for k in 0..<(n % 3) {
                    try await stack.postgres.execute(
                        """
                        INSERT INTO events (tenant_id, event_id, name, subscriber_id, occurred_at)
                        VALUES ($1::uuid, $2, 'app.opened', $3, now() - interval '1 hour')
                        """, [tenant, "e-\(id)-\(k)", id])
                    opened[id, default: 0] += 1
                }
                if n % 4 == 0 {
                    try await stack.postgres.execute(
                        """
                        INSERT INTO subscriber_aliases (tenant_id, anonymous_id, subscriber_id) VALUES ($1::uuid, $2, $3)
                        """, [tenant, "anon-\(id)", id])
                    try await stack.postgres.execute(
                        """
                        INSERT INTO events (tenant_id, event_id, name, subscriber_id, occurred_at)
                        VALUES ($1::uuid, $2, 'app.opened', $3, now() - interval '2 hours')
                        """, [tenant, "e-anon-\(id)", "anon-\(id)"])
                    opened[id, default: 0] += 1
                }
            }
            // An old event never counts (outside the window).
            try await stack.postgres.execute(
                """
                INSERT INTO events (tenant_id, event_id, name, subscriber_id, occurred_at)
                VALUES ($1::uuid, 'e-old', 'app.opened', 'm01', now() - interval '40 days')
                """, [tenant])
            let matching = opened.filter { $0.value >= 2 }.keys
            let expected = Set(matching.flatMap { devices[$0]! })
            #expect(matching.count > 6 && matching.count < 40, "the audience spans several pages but not everyone")

            let expression = #"count("app.opened", within: "7d") >= 2"#
            let id = try await stack.send(["where": .string(expression), "title": "Regulars"])
            let message = try await stack.waitSettled(id)
            #expect(message["audienceSize"]?.intValue == Int64(expected.count))
            let sentTo = try await stack.deliveries(id).compactMap { $0["deviceToken"]?.stringValue }
            #expect(sentTo.count == expected.count, "one delivery per device")
            #expect(Set(sentTo) == expected)
            for token in expected { #expect(try await stack.simulator.pushes(token: token).count == 1) }
            let recorded = try await stack.postgres.query(
                "SELECT fanout_count, fanout_after_subscriber FROM messages WHERE id = $1::uuid", [id])
            #expect(
                try recorded.first?.decode(Int64.self, at: 0) == Int64(matching.count),
                "every streamed subscriber counted once")
            #expect(
                try recorded.first?.decode(String?.self, at: 1)
                    == matching.max { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        }
    }
}
