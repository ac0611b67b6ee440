import BuzzKit
import BuzzKitWire
import Foundation
import Synchronization
import Testing

/// Records when (on the test's clock) each `/v1/events` request was made.
final class AttemptTimes: Sendable {
    private let times = Mutex<[Date]>([])
    func record(_ date: Date) { times.withLock { $0.append(date) } }
    var all: [Date] { times.withLock { $0 } }
    var count: Int { all.count }
}

@Suite("SDK: retrying a failed flush with backoff")
struct BackoffTests {
    /// A transport that fails `/v1/events` while `failing` says so, recording each attempt's time.
    func harness(
        failing: @escaping @Sendable (Int) -> Bool,
        configure: (inout BuzzKit.Configuration) -> Void = { _ in }
    ) throws -> (Harness, AttemptTimes) {
        let clock = ManualClock()
        let times = AttemptTimes()
        let transport = FakeTransport { request, _ in
            guard request.url.path == "/v1/events" else { return FakeTransport.accepted() }
            let attempt = times.count
            times.record(clock.now())
            if failing(attempt) { throw NetworkDown() }
            return FakeTransport.accepted()
        }
        return (try Harness(clock: clock, transport: transport, configure: configure), times)
    }

    @Test func retriesComeOnTheClockWithDoublingJitteredCappedDelays() async throws {
        let (h, times) = try harness(failing: { _ in true }) {
            $0.retryMaxDelay = 100
            $0.maxAttempts = 1_000  // not given up within this test
        }
        h.client.track("offline")
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 3)  // the track's own flush
        #expect(times.count == 1)
        await h.clock.advance(by: 1_000)  // no trigger at all: only retries
        let attempts = times.all
        // Full delays 5, 10, 20, 40, 80, then capped at 100; each retry waits [d/2, d].
        #expect(attempts.count >= 12)
        for (index, pair) in zip(attempts, attempts.dropFirst()).enumerated() {
            let full = min(100, 5 * pow(2, Double(index)))
            let gap = pair.1.timeIntervalSince(pair.0)
            #expect(gap >= full / 2 && gap <= full, "retry \(index + 1): \(gap) s for a full delay of \(full) s")
        }
        #expect(await h.client.pendingEventCount() == 1)
    }

    @Test func aSuccessEndsTheRetriesAndTheNextTrackFlushesAfterThreeSeconds() async throws {
        let (h, times) = try harness(failing: { $0 < 3 })
        h.client.track("offline")
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 3)
        await h.clock.advance(by: 100)  // retries at most 5 + 10 s after the first: the third one succeeds
        #expect(times.count == 4)
        #expect(await h.client.pendingEventCount() == 0)
        await h.clock.advance(by: 10_000)
        #expect(times.count == 4)  // nothing to retry: no loop
        h.client.track("online.again")
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 3)
        #expect(times.count == 5)
        #expect(h.transport.sentNames.last == "online.again")
    }

    @Test func aTrackDuringTheBackoffWaitsForTheRetry() async throws {
        let (h, times) = try harness(failing: { _ in true }) { $0.retryBaseDelay = 60 }
        h.client.track("first")
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 3)
        #expect(times.count == 1)  // the next retry is 30 to 60 s away
        h.client.track("second")
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 26)  // 26 s after the failure: the track alone would have flushed at 3 s
        #expect(times.count == 1)
        await h.clock.advance(by: 34)  // 60 s after the failure, the longest the first retry waits
        #expect(times.count == 2)
    }

    @Test(arguments: [LifecycleSignal.online, .background])
    func backOnlineOrBackgroundFlushesAtOnceDespiteTheBackoff(signal: LifecycleSignal) async throws {
        let (h, times) = try harness(failing: { $0 == 0 }) {
            $0.retryBaseDelay = 60
            $0.automaticSessionTracking = false
        }
        await h.client.start()
        h.client.track("queued")
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 3)
        #expect(times.count == 1)
        await h.lifecycle.send(signal)
        #expect(times.count == 2)
        #expect(await h.client.pendingEventCount() == 0)
    }
}
