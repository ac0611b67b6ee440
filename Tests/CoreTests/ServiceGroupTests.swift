import BuzzKitCore
import Synchronization
import Testing

/// Records the order of lifecycle calls across services.
private final class Journal: Sendable {
    private let entries = Mutex<[String]>([])
    func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// A service that runs until shut down, optionally taking a while to finish, or failing at once.
/// When it finishes it notes whether each service it depends on was still running.
private final class ProbeService: Service {
    let name: String
    let journal: Journal
    let finishDelay: Duration
    let failOnStart: Bool
    let dependencies: [ProbeService]
    private let stop = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let stopped = Mutex(false)
    private let returned = Mutex(false)

    init(
        _ name: String, journal: Journal, finishDelay: Duration = .zero, failOnStart: Bool = false,
        dependsOn dependencies: [ProbeService] = []
    ) {
        self.name = name
        self.journal = journal
        self.finishDelay = finishDelay
        self.failOnStart = failOnStart
        self.dependencies = dependencies
    }

    /// True from the start of `run()` until it returned.
    var isRunning: Bool { !returned.withLock { $0 } }

    func run() async throws {
        defer { returned.withLock { $0 = true } }
        if failOnStart { throw ProbeFailure() }
        await withCheckedContinuation { continuation in
            let already = stopped.withLock { stopped in
                if !stopped { stop.withLock { $0 = continuation } }
                return stopped
            }
            if already { continuation.resume() }
        }
        try? await Task.sleep(for: finishDelay)
        for dependency in dependencies where !dependency.isRunning {
            journal.add("\(name) finished after \(dependency.name) stopped")
        }
        journal.add("\(name) finished")
    }

    func shutdown() async {
        journal.add("\(name) shutdown")
        let continuation = stopped.withLock { stopped in
            stopped = true
            return stop.withLock { c in
                defer { c = nil }
                return c
            }
        }
        continuation?.resume()
    }
}

private struct ProbeFailure: Error {}

@Suite struct ServiceGroupTests {
    @Test func shutsDownInReverseOrderAndWaitsForInFlightWork() async throws {
        let journal = Journal()
        let group = ServiceGroup(
            services: [
                ProbeService("pool", journal: journal),
                ProbeService("http", journal: journal, finishDelay: .milliseconds(200))
            ],
            configuration: .init(signals: []), logger: .silent())
        async let outcome = group.run()
        try await Task.sleep(for: .milliseconds(50))
        group.triggerShutdown()
        #expect(try await outcome == .stopped)
        #expect(journal.all == ["http shutdown", "http finished", "pool shutdown", "pool finished"])
    }

    /// The contract the pools rely on: a consumer still finishing its in-flight work after
    /// shutdown was asked keeps the pool and the client it uses (listed before it) running until
    /// its `run()` returns; only then are they asked to stop, the last-listed first.
    @Test func aServiceFinishingWorkKeepsWhatItDependsOnAliveUntilItReturns() async throws {
        let journal = Journal()
        let pool = ProbeService("pool", journal: journal)
        let client = ProbeService("client", journal: journal, finishDelay: .milliseconds(100), dependsOn: [pool])
        let consumer = ProbeService(
            "consumer", journal: journal, finishDelay: .milliseconds(500), dependsOn: [pool, client])
        let http = ProbeService("http", journal: journal, dependsOn: [consumer])
        let group = ServiceGroup(
            services: [pool, client, consumer, http], configuration: .init(signals: []),
            logger: .silent())
        async let outcome = group.run()
        try await Task.sleep(for: .milliseconds(50))
        group.triggerShutdown()
        #expect(try await outcome == .stopped)
        #expect(
            journal.all == [
                "http shutdown", "http finished",
                "consumer shutdown", "consumer finished",
                "client shutdown", "client finished",
                "pool shutdown", "pool finished"
            ])
    }

    @Test func aFailureStopsTheOthersLastToFirst() async throws {
        let journal = Journal()
        let pool = ProbeService("pool", journal: journal)
        let broken = ProbeService("broken", journal: journal, failOnStart: true)
        let group = ServiceGroup(services: [pool, broken], configuration: .init(signals: []), logger: .silent())
        await #expect(throws: ServiceGroupError.self) { try await group.run() }
        #expect(journal.all == ["broken shutdown", "pool shutdown", "pool finished"])
    }

    @Test func aFailingServiceStopsTheOthersAndIsReported() async throws {
        let journal = Journal()
        let group = ServiceGroup(
            services: [
                ProbeService("consumer", journal: journal), ProbeService("broken", journal: journal, failOnStart: true)
            ],
            configuration: .init(signals: []), logger: .silent())
        await #expect(throws: ServiceGroupError.self) { try await group.run() }
        #expect(journal.all.contains("consumer finished"))
    }

    @Test func givesUpAfterTheShutdownTimeout() async throws {
        let journal = Journal()
        let group = ServiceGroup(
            services: [ProbeService("slow", journal: journal, finishDelay: .seconds(5))],
            configuration: .init(signals: [], shutdownTimeout: .milliseconds(100)), logger: .silent())
        async let outcome = group.run()
        group.triggerShutdown()
        // Its run() still sleeps when the deadline passes; the group cancels it and says so.
        #expect(try await outcome == .timedOut)
    }
}
