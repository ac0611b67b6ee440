import BuzzKitCore
import BuzzKitPostgres
import BuzzKitTestSupport
import Foundation
import Testing

/// Restarts a cluster of its own (never the shared one), so other suites are unaffected.
@Suite("Postgres server restart", .serialized, .requiresTestStack)
struct PostgresRestartTests {
    @Test func queryAfterServerRestartSucceeds() async throws {
        let server = try await ThrowawayPostgres.start()
        var configuration = try PostgresConfiguration(url: server.url)
        configuration.poolSize = 2
        let sink = CapturingSink()
        let client = PostgresClient(
            configuration: configuration, logger: Logger(label: "restart", logLevel: .warning, sink: sink))
        do {
            // Open both pooled connections, so both are stale after the restart.
            let pids = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await client.query("SELECT pg_backend_pid(), pg_sleep(0.1)")[0].decode(Int.self, at: 0)
                    }
                }
                return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
            }
            #expect(pids.count == 2)
            let stream = try await client.listen("restart_channel")

            try await server.restart()

            // Every stale pooled connection is noticed and reopened; no error reaches the caller.
            for i in 0..<4 {
                let rows = try await client.query("SELECT $1::int8 + 1", [i])
                #expect(try rows[0].decode(Int.self, at: 0) == i + 1)
            }
            try await client.ping()
            // The stale connections were noticed and reopened (not merely lucky).
            #expect(sink.captured.contains { $0.contains("postgres.reconnect") })
            // A transaction on a reopened connection works too.
            let committed = try await client.withTransaction { tx in
                try await tx.query("SELECT 1")[0].decode(Int.self, at: 0)
            }
            #expect(committed == 1)
            // The listener reconnects and LISTENs again; notify until one arrives.
            let received = try await withThrowingTaskGroup(of: String?.self) { group in
                group.addTask {
                    for try await notification in stream { return notification.payload }
                    return nil
                }
                group.addTask {
                    for attempt in 0..<100 {
                        try await client.notify("restart_channel", payload: "after restart")
                        try await Task.sleep(for: .milliseconds(100 + attempt))
                    }
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first
            }
            #expect(received == "after restart")
        } catch {
            await client.shutdown()
            try? await server.stop()
            throw error
        }
        await client.shutdown()
        try await server.stop()
    }
}
