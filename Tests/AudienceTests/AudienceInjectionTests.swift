import BuzzKitAudience
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@Suite("Audience: SQL injection attempts are inert", .requiresPostgres)
struct AudienceInjectionTests {
    static let hostileKey = "x'); DROP TABLE subscribers; --"
    static let hostileValue = #"a'b"c\d'); DROP TABLE subscribers; --"#

    @Test func hostileNamesAndValuesAreParameters() async throws {
        let postgres = try await AudienceDatabase.migrated("audinj")
        try await withCleanup {
            let tenant = UUID()
            let workspace = UUID()
            try await postgres.execute("INSERT INTO workspaces (id, name) VALUES ($1::uuid, 'w')", [workspace])
            try await postgres.execute(
                "INSERT INTO tenants (id, workspace_id, name) VALUES ($1::uuid, $2::uuid, 't')", [tenant, workspace])
            let attributes: JSONValue = [
                .init(stringLiteral: Self.hostileKey): .string(Self.hostileValue),
                "nested": [.init(stringLiteral: "k\"}"): .string(Self.hostileValue)]
            ]
            try await postgres.execute(
                "INSERT INTO subscribers (tenant_id, id, attributes, timezone) VALUES ($1::uuid, 'victim', $2::jsonb, $3)",
                [tenant, attributes, Self.hostileValue])
            try await postgres.execute("INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, 'other')", [tenant])
            try await postgres.execute(
                "INSERT INTO topics (tenant_id, key) VALUES ($1::uuid, $2)", [tenant, Self.hostileValue])
            try await postgres.execute(
                "INSERT INTO topic_subscriptions (tenant_id, topic_key, subscriber_id) VALUES ($1::uuid, $2, 'victim')",
                [tenant, Self.hostileValue])
            try await postgres.execute(
                """
                INSERT INTO events (tenant_id, event_id, name, subscriber_id, data, occurred_at)
                VALUES ($1::uuid, 'e1', $2, 'victim', $3::jsonb, now() - interval '1 hour')
                """, [tenant, Self.hostileValue, JSONValue.object([Self.hostileKey: .string(Self.hostileValue)])])

            let literal = JSONValue.string(Self.hostileValue).jsonString  // a valid string literal of the language
            let key = "`\(Self.hostileKey)`"
            let expressions = [
                "\(key) == \(literal)",
                "\(key) != \(literal)",
                "\(key) >= \(literal)",
                "\(key) startsWith \(literal)",
                "\(key) in [\(literal), \"'--\"]",
                "exists(\(key))",
                "nested.`k\"}` == \(literal)",
                "timezone == \(literal)",
                "in_topic(\(literal))",
                "did(\(literal), within: \"1d\", where: \(key) == \(literal))",
                "count(\(literal)) >= 1"
            ]
            let now = Date()
            for text in expressions {
                let expression = try AudienceExpression.parse(text)
                let count = try await AudienceDatabase.count(postgres, expression, tenant: tenant, now: now)
                let ids = try await AudienceDatabase.pagedIDs(
                    postgres, expression, tenant: tenant, now: now, pageSize: 10)
                let expected = text.contains("!=") ? [String]() : ["victim"]
                #expect(ids == expected, "\(text)")
                #expect(count == expected.count, "\(text)")
                let sql = AudienceQuery.count(expression, tenantId: tenant, now: now).sql
                #expect(!sql.contains("DROP") && !sql.contains("'--"), "values never reach the SQL text: \(sql)")
            }
            let remaining = try await postgres.query("SELECT count(*) FROM subscribers")
            #expect(try remaining[0].decode(Int64.self, at: 0) == 2)
        } finally: {
            await postgres.shutdown()
        }
    }
}
