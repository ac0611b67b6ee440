import BuzzKitAudience
import BuzzKitTestSupport
import Foundation
import Testing

/// bench/audience.sh runs the SQL the compiler emits for the four common shapes, pasted as text
/// (the script only has psql). This test fails when the compiler's output and the script drift.
@Suite("Audience: bench/audience.sh runs the compiler's SQL")
struct AudienceBenchSQLTests {
    static let shapes = [
        #"plan == "pro""#,
        #"did("workout.completed", within: "7d")"#,
        #"count("app.opened", within: "30d") >= 3"#,
        #"in_topic("sports")"#
    ]

    @Test(arguments: shapes)
    func scriptContainsCompiledSQL(_ text: String) throws {
        let script = try String(contentsOfFile: TestEnvironment.repositoryRoot + "/bench/audience.sh", encoding: .utf8)
        let expression = try AudienceExpression.parse(text)
        let count = AudienceQuery.count(expression, tenantId: UUID(), now: Date())
        let page = AudienceQuery.page(expression, tenantId: UUID(), after: "", limit: 1000, now: Date())
        #expect(script.contains(count.sql), "count SQL for \(text) not in bench/audience.sh:\n\(count.sql)")
        #expect(script.contains(page.sql), "page SQL for \(text) not in bench/audience.sh:\n\(page.sql)")
        let all = AudienceQuery.all(expression, tenantId: UUID(), now: Date())
        #expect(script.contains("'" + all.sql + "'"), "all SQL for \(text) not in bench/audience.sh:\n\(all.sql)")
    }

    /// The script measures with the planner settings the services use (`SET name = value` for
    /// every `set_config('name', 'value', true)` of AudienceQuery.settings).
    @Test func scriptUsesTheSettings() throws {
        let script = try String(contentsOfFile: TestEnvironment.repositoryRoot + "/bench/audience.sh", encoding: .utf8)
        let pattern = try Regex(#"set_config\('([a-z_]+)', '([^']*)', true\)"#)
        let settings = AudienceQuery.settings.matches(of: pattern).map { match in
            (String(match.output[1].substring ?? ""), String(match.output[2].substring ?? ""))
        }
        #expect(settings.count >= 8)
        for (name, value) in settings {
            #expect(
                script.contains("SET \(name) = \(value);") || script.contains("SET \(name) = '\(value)';"),
                "bench/audience.sh does not SET \(name) = \(value)")
        }
    }
}
