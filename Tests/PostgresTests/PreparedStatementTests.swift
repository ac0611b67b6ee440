import BuzzKitPostgres
import BuzzKitTestSupport
import Testing

/// Statements with parameters are prepared once per connection and reused by name.
@Suite(.requiresPostgres) struct PreparedStatementTests {
    @Test func aStatementIsPreparedOnceAndReused() async throws {
        let schema = TestEnvironment.uniqueName("prep")
        let client = try await PostgresTestSupport.client(schema: schema, poolSize: 1)
        try await withCleanup {
            try await client.execute("CREATE TABLE t (id int PRIMARY KEY, name text)")
            for n in 1...5 { try await client.execute("INSERT INTO t VALUES ($1, $2)", [n, "n\(n)"]) }
            for n in 1...5 {
                let rows = try await client.query("SELECT name FROM t WHERE id = $1", [n])
                #expect(try rows.first?.decode(String.self, at: 0) == "n\(n)")
            }
            let prepared = try await client.query(
                "SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%FROM t WHERE id%'")
            #expect(prepared.count == 1)
        } finally: {
            await client.shutdown()
        }
    }

    @Test func aSchemaChangeBetweenRunsIsHandled() async throws {
        let schema = TestEnvironment.uniqueName("prep")
        let client = try await PostgresTestSupport.client(schema: schema, poolSize: 1)
        try await withCleanup {
            try await client.execute("CREATE TABLE t (id int PRIMARY KEY, name text)")
            try await client.execute("INSERT INTO t VALUES ($1, $2)", [1, "a"])
            #expect(try await client.query("SELECT * FROM t WHERE id = $1", [1]).columns == ["id", "name"])
            try await client.execute("ALTER TABLE t ADD COLUMN extra text")
            #expect(try await client.query("SELECT * FROM t WHERE id = $1", [1]).columns == ["id", "name", "extra"])
        } finally: {
            await client.shutdown()
        }
    }

    @Test func aStatementThatCannotBePreparedReportsItsError() async throws {
        let schema = TestEnvironment.uniqueName("prep")
        let client = try await PostgresTestSupport.client(schema: schema, poolSize: 1)
        try await withCleanup {
            await #expect(throws: PostgresError.self) {
                try await client.query("SELECT * FROM missing WHERE id = $1", [1])
            }
            // The connection is still usable and nothing bad was cached.
            try await client.execute("CREATE TABLE missing (id int)")
            #expect(try await client.query("SELECT * FROM missing WHERE id = $1", [1]).isEmpty)
        } finally: {
            await client.shutdown()
        }
    }
}
