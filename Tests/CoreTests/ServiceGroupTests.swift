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
private final class ProbeService: Service {
    let name: String
    let journal: Journal
    let finishDelay: Duration
    let failOnStart: Bool
    private let stop = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let stopped = Mutex(false)

    init(_ name: String, journal: Journal, finishDelay: Duration = .zero, failOnStart: Bool = false) {
        self.name = name
        self.journal = journal
        self.finishDelay = finishDelay
        self.failOnStart = failOnStart
    }

    func run() async throws {
        if failOnStart { throw ProbeFailure() }
        await withCheckedContinuation { continuation in
            let already = stopped.withLock { stopped in
                if !stopped { stop.withLock { $0 = continuation } }
                return stopped
            }
            if already { continuation.resume() }
        }
        try? await Task.sleep(for: finishDelay)
        journal.add("\(name) finished")
    }

    func shutdown() async {
        journal.add("\(name) shutdown")
        let continuation = stopped.withLock { stopped in
            stopped = true
            return stop.withLock { c in defer { c = nil }; return c }
        }
        continuation?.resume()
    }
}

private struct ProbeFailure: Error {}

@Suite struct ServiceGroupTests {
    @Test func shutsDownInReverseOrderAndWaitsForInFlightWork() async throws {
        let journal = Journal()
        let group = ServiceGroup(
            services: [ProbeService("pool", journal: journal), ProbeService("http", journal: journal, finishDelay: .milliseconds(200))],
            configuration: .init(signals: []), logger: .silent())
        async let outcome = group.run()
        try await Task.sleep(for: .milliseconds(50))
        group.triggerShutdown()
        #expect(try await outcome == .stopped)
        let entries = journal.all
        #expect(entries.firstIndex(of: "http shutdown")! < entries.firstIndex(of: "pool shutdown")!)
        #expect(entries.contains("http finished"))
        #expect(entries.contains("pool finished"))
    }

    @Test func aFailingServiceStopsTheOthersAndIsReported() async throws {
        let journal = Journal()
        let group = ServiceGroup(
            services: [ProbeService("consumer", journal: journal), ProbeService("broken", journal: journal, failOnStart: true)],
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
