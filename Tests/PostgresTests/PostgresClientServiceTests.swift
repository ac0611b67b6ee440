import BuzzKitCore
import BuzzKitPostgres
import BuzzKitTestSupport
import Synchronization
import Testing

/// A part that, once asked to stop, still finishes a piece of work on the database (as a consumer
/// finishes its in-flight chunk), and records how that last statement went.
private final class FinishingWork: Service {
    let name = "finishing-work"
    let client: PostgresClient
    private let stopRequested = OneShot<Void>()
    let lastStatement = Mutex<Result<Int, any Error>?>(nil)

    init(client: PostgresClient) { self.client = client }

    func run() async throws {
        _ = try? await stopRequested.wait()
        try? await Task.sleep(for: .milliseconds(300))
        let result: Result<Int, any Error>
        do {
            result = .success(try await client.query("SELECT 41 + 1")[0].decode(Int.self, at: 0))
        } catch {
            result = .failure(error)
        }
        lastStatement.withLock { $0 = result }
    }

    func shutdown() async { stopRequested.fulfill(()) }
}

@Suite("PostgresClient as a service", .requiresPostgres)
struct PostgresClientServiceTests {
    /// The pool is a member of the group, listed first: a part still working after shutdown was
    /// asked keeps it open until that part's `run()` returned; then the pool closes.
    @Test func thePoolStaysOpenUntilThePartsAfterItReturned() async throws {
        let client = try PostgresClient(url: TestEnvironment.postgresURL, logger: .silent())
        let work = FinishingWork(client: client)
        let group = ServiceGroup(services: [client, work], configuration: .init(signals: []), logger: .silent())
        async let outcome = group.run()
        #expect(try await client.query("SELECT 1")[0].decode(Int.self, at: 0) == 1)
        group.triggerShutdown()
        #expect(try await outcome == .stopped)
        let last = try #require(work.lastStatement.withLock { $0 })
        #expect(try last.get() == 42)
        // Closed once the group is done.
        await #expect(throws: PostgresError.self) { try await client.query("SELECT 1") }
    }
}
