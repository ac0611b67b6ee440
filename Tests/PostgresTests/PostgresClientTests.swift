import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@Suite("PostgresClient against the server", .requiresPostgres)
struct PostgresClientTests {
    @Test func failingStatementsReportSQLState() async throws {
        try await withClient(schema: TestEnvironment.uniqueName("errors")) { (client: PostgresClient) async throws in
            try await client.execute("CREATE TABLE t (id int PRIMARY KEY)")
            try await client.execute("INSERT INTO t VALUES ($1)", [1])
            let duplicate = await #expect(throws: PostgresError.self) {
                try await client.execute("INSERT INTO t VALUES ($1)", [1])
            }
            #expect(duplicate?.code == .uniqueViolation)
            #expect(duplicate?.constraint == "t_pkey")
            #expect(duplicate?.detail?.contains("already exists") == true)
            #expect(duplicate?.isConnectionError == false)
            let syntax = await #expect(throws: PostgresError.self) { try await client.query("SELEC 1") }
            #expect(syntax?.code == .syntaxError)
            let missing = await #expect(throws: PostgresError.self) { try await client.query("SELECT * FROM nope") }
            #expect(missing?.code == .undefinedTable)
            // The connection is still fine afterwards.
            #expect(try await client.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0) == 1)
        }
    }

    @Test func throwingTransactionRollsBack() async throws {
        struct Boom: Error {}
        try await withClient(schema: TestEnvironment.uniqueName("tx")) { (client: PostgresClient) async throws in
            try await client.execute("CREATE TABLE t (v text)")
            await #expect(throws: Boom.self) {
                try await client.withTransaction { tx in
                    try await tx.execute("INSERT INTO t VALUES ($1)", ["rolled back"])
                    throw Boom()
                }
            }
            let committed = try await client.withTransaction { tx -> Int in
                try await tx.execute("INSERT INTO t VALUES ($1)", ["kept"])
            }
            #expect(committed == 1)
            let values = try await client.query("SELECT v FROM t").map { try $0.decode(String.self, at: 0) }
            #expect(values == ["kept"])
            // A failing statement caught inside the closure still dooms the transaction.
            await #expect(throws: PostgresError.self) {
                try await client.withTransaction { tx in
                    try await tx.execute("INSERT INTO t VALUES ($1)", ["doomed"])
                    _ = try? await tx.query("SELECT 1/0")
                }
            }
            #expect(try await client.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0) == 1)
        }
    }

    @Test func connectionLeftInTransactionIsCleanedUp() async throws {
        try await withClient(schema: TestEnvironment.uniqueName("leak"), poolSize: 1) {
            (client: PostgresClient) async throws in
            try await client.execute("CREATE TABLE t (v int)")
            try await client.withConnection { connection in
                try await connection.execute("BEGIN")
                try await connection.execute("INSERT INTO t VALUES (1)")
            }
            // Same (only) connection: the open transaction was rolled back on release.
            #expect(try await client.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0) == 0)
        }
    }

    @Test func poolServesManyConcurrentQueries() async throws {
        try await withClient(poolSize: 4) { (client: PostgresClient) async throws in
            let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for i in 0..<50 {
                    group.addTask {
                        let rows = try await client.query("SELECT pg_sleep(0.05), $1::int8, pg_backend_pid()", [i])
                        return (try rows[0].decode(Int.self, at: 1), try rows[0].decode(Int.self, at: 2))
                    }
                }
                var all: [(Int, Int)] = []
                for try await result in group { all.append(result) }
                return all
            }
            #expect(results.map(\.0).sorted() == Array(0..<50))
            let backends = Set(results.map(\.1))
            #expect(backends.count <= 4)
            #expect(backends.count >= 2)
        }
    }

    /// The callback form shares the pool with tasks: every call answers once with its own rows,
    /// calls beyond the pool wait their turn, errors arrive through the callback, and a
    /// connection left inside a transaction is cleaned up before the next lease.
    @Test func callbackQueriesShareThePoolWithTasks() async throws {
        let schema = TestEnvironment.uniqueName("callback")
        try await withClient(schema: schema, poolSize: 2) { (client: PostgresClient) async throws in
            @Sendable func viaCallback(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws
                -> PostgresRows
            {
                try await withCheckedThrowingContinuation { continuation in
                    client.query(sql, parameters) { continuation.resume(with: $0) }
                }
            }
            let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for i in 0..<40 {
                    group.addTask {
                        let sql = "SELECT pg_sleep(0.01), $1::int8, pg_backend_pid()"
                        let rows = i % 2 == 0 ? try await viaCallback(sql, [i]) : try await client.query(sql, [i])
                        return (try rows[0].decode(Int.self, at: 1), try rows[0].decode(Int.self, at: 2))
                    }
                }
                var all: [(Int, Int)] = []
                for try await result in group { all.append(result) }
                return all
            }
            #expect(results.map(\.0).sorted() == Array(0..<40))
            #expect(Set(results.map(\.1)).count <= 2)

            let syntax = await #expect(throws: PostgresError.self) { try await viaCallback("SELEC 1") }
            #expect(syntax?.code == .syntaxError)

            // BEGIN through a callback leaves its connection in a transaction: it must be rolled
            // back on release, so the INSERT after it commits on its own.
            try await client.execute("CREATE TABLE t (v int)")
            _ = try await viaCallback("BEGIN")
            _ = try await viaCallback("INSERT INTO t VALUES (1)")
            _ = try await viaCallback("INSERT INTO t VALUES (2)")
            let other = try await PostgresTestSupport.client(schema: schema, poolSize: 1)
            #expect(try await other.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0) == 2)
            await other.shutdown()
        }
        let closed = try PostgresClient(url: TestEnvironment.postgresURL, logger: .silent())
        await closed.shutdown()
        let error = await #expect(throws: PostgresError.self) {
            try await withCheckedThrowingContinuation { continuation in
                closed.query("SELECT 1", []) { continuation.resume(with: $0) }
            }
        }
        #expect(error?.code == .connectionDoesNotExist)
    }

    @Test func copyWritesRows() async throws {
        try await withClient(schema: TestEnvironment.uniqueName("copy")) { (client: PostgresClient) async throws in
            try await client.execute(
                "CREATE TABLE t (id int8, name text, doc jsonb, tags text[], raw bytea, at timestamptz)")
            let at = Date(timeIntervalSince1970: 1_700_000_000)
            let tricky = "tab\there\nnewline \\backslash \\N not null \r"
            var rows: [[any PostgresEncodable]] = []
            for i in 0..<5000 {
                let name: String? = i % 7 == 0 ? nil : (i == 1 ? tricky : "name \(i)")
                let doc: JSONValue = ["i": .int(Int64(i)), "s": "ü\t\"q\""]
                let tags: [String] = ["a", "b,c", "d\"e"]
                rows.append([i, name, doc, tags, Data([UInt8(i % 256), 0x5c]), at])
            }
            let written = try await client.copy(
                into: "t", columns: ["id", "name", "doc", "tags", "raw", "at"], rows: rows)
            #expect(written == 5000)
            let summary = try await client.query("SELECT count(*), count(name), sum(id) FROM t")
            #expect(try summary[0].decode((Int, Int, Int).self) == (5000, 5000 - 715, 4999 * 5000 / 2))
            let one = try await client.query("SELECT name, doc, tags, raw, at FROM t WHERE id = 1")
            let (name, doc, tags, raw, gotAt) = try one[0].decode((String, JSONValue, [String], Data, Date).self)
            #expect(name == tricky)
            #expect(doc == ["i": 1, "s": "ü\t\"q\""])
            #expect(tags == ["a", "b,c", "d\"e"])
            #expect(raw == Data([1, 0x5c]))
            #expect(gotAt == at)
            // A bad row aborts the whole COPY and the connection stays usable.
            let bad = await #expect(throws: PostgresError.self) {
                try await client.copy(
                    into: "t", columns: ["id"], rows: [[1], ["not a number"]] as [[any PostgresEncodable]])
            }
            #expect(bad?.code == .invalidTextRepresentation)
            #expect(try await client.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0) == 5000)
        }
    }

    @Test func multiRowInsert() async throws {
        try await withClient(schema: TestEnvironment.uniqueName("insert")) { (client: PostgresClient) async throws in
            try await client.execute("CREATE TABLE t (id int8 PRIMARY KEY, name text)")
            let rows: [[any PostgresEncodable]] = (0..<2500).map { [$0, "n\($0)"] }
            #expect(try await client.insert(into: "t", columns: ["id", "name"], rows: rows) == 2500)
            let again = try await client.insert(
                into: "t", columns: ["id", "name"], rows: Array(rows.prefix(10)), suffix: "ON CONFLICT (id) DO NOTHING")
            #expect(again == 0)
            #expect(try await client.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0) == 2500)
        }
    }

    @Test func listenNotifyDelivers() async throws {
        try await withClient { (client: PostgresClient) async throws in
            let channel = TestEnvironment.uniqueName("chan")
            let stream = try await client.listen(channel)
            try await client.notify(channel, payload: "first")
            try await client.notify(channel, payload: "second ü")
            try await client.notify(TestEnvironment.uniqueName("other"), payload: "not for us")
            var received: [PostgresNotification] = []
            for try await notification in stream {
                received.append(notification)
                if received.count == 2 { break }
            }
            #expect(received.map(\.payload) == ["first", "second ü"])
            #expect(received.allSatisfy { $0.channel == channel })
        }
    }

    @Test func pingAndShutdown() async throws {
        let client = try PostgresClient(url: TestEnvironment.postgresURL, logger: .silent())
        try await client.ping()
        await client.shutdown()
        let error = await #expect(throws: PostgresError.self) { try await client.ping() }
        #expect(error?.code == .connectionDoesNotExist)
        #expect(error?.isConnectionError == true)
    }

    @Test func unreachableServerIsAConnectionError() async throws {
        let client = PostgresClient(
            configuration: PostgresConfiguration(host: "127.0.0.1", port: 1, user: "nobody", password: "hunter2"),
            logger: .silent())
        let error = await #expect(throws: PostgresError.self) { try await client.ping() }
        #expect(error?.code == .unableToConnect)
        #expect(error?.isConnectionError == true)
        #expect(error.map { !"\($0)".contains("hunter2") } == true)
        await client.shutdown()
    }
}
