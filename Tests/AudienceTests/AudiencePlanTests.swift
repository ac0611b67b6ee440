import BuzzKitAudience
import BuzzKitPostgres
import BuzzKitTestSupport
import Foundation
import Testing

/// The plan shape the count goal depends on (bench/audience.sh: 1.5-2.2 s with a hash table of
/// every owner and a probe per owner, about 0.8 s sorted): under AudienceQuery.settings an event
/// clause is grouped in owner order and merged with `subscribers`, never hashed or probed per row.
/// The three-way suite checks the results; this checks the settings still rule out the others
/// (on the fixtures' small tables the planner would otherwise hash or loop). Which of the merge
/// plans the planner picks depends on table sizes: bench/audience.sh saves the real plans.
@Suite("Audience: plans under AudienceQuery.settings", .requiresPostgres)
struct AudiencePlanTests {
    static let shapes = [
        #"count("app.opened", within: "30d") >= 3"#,
        #"did("workout.completed", within: "7d")"#,
        #"in_topic("sports")"#
    ]

    @Test(arguments: shapes)
    func mergedNotHashed(_ text: String) async throws {
        let postgres = try await ThreeWayDatabase.shared.postgres()
        let expression = try AudienceExpression.parse(text)
        let query = AudienceQuery.count(expression, tenantId: ThreeWayDatabase.tenant, now: Date())
        let plan = try await postgres.withTransaction { tx in
            try await tx.execute(AudienceQuery.settings)
            return try await tx.query("EXPLAIN (COSTS OFF) " + query.sql, query.parameters)
                .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
        }
        #expect(plan.contains("Merge"), "no merge join:\n\(plan)")
        #expect(!plan.contains("Hash"), "hashes:\n\(plan)")
        #expect(!plan.contains("Nested Loop"), "probes per row:\n\(plan)")
        if text.hasPrefix("count") {
            #expect(plan.contains("GroupAggregate"), "owners not grouped in order:\n\(plan)")
        }
    }
}
