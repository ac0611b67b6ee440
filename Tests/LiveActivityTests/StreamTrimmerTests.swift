import BuzzKitContracts
import BuzzKitCore
import BuzzKitRedis
import BuzzKitTestSupport
import Testing

@testable import LiveActivityApp

/// The liveactivity service's `bk:la` trimmer over thousands of periods, against the test Redis.
///
/// Issue 24's leak: it waited for its period with `withDeadline` racing the stop signal, whose wait
/// could not be cancelled, so every period (10 s) left one task parked on that signal until
/// shutdown (about 8,600 a day). The parked tasks are exactly the signal's waiters, so their count
/// is what this test samples: it grew by one per period before (this test, run with main's
/// StreamTrimmer and a 1 ms interval, found as many waiters as periods), and is at most one now.
@Suite(.requiresRedis) struct StreamTrimmerTests {
    @Test func itsWaitsStayFlatOverThousandsOfPeriodsAndItTrims() async throws {
        let redis = try RedisTestSupport.client()
        let stream = StreamName(TestEnvironment.uniqueName("bk:la:trimmed"))
        // 1,000 entries (ten of Redis's 100-entry nodes, so `MINID ~` can drop whole ones), read
        // and acknowledged by a group: the trimmer may drop them.
        try await redis.createGroup(stream.rawValue, group: "g")
        try await redis.xaddBatch(stream.rawValue, entries: (0..<1000).map { [("n", Array("\($0)".utf8))] })
        var read = 0
        while read < 1000 {
            let batch = try await redis.readGroup(stream.rawValue, group: "g", consumer: "c", count: 500)
            try await redis.ack(stream.rawValue, group: "g", ids: batch.map(\.id))
            read += batch.count
        }
        let trimmer = StreamTrimmer(
            redis: redis, stream: stream, interval: .milliseconds(1), logger: .silent(), metrics: MetricsRegistry())
        let periods = 2000
        var mostWaiters = 0
        var length = 0
        try await withCleanup {
            try await withRunning([trimmer]) {
                while trimmer.loop.runs.current < periods {
                    mostWaiters = max(mostWaiters, trimmer.loop.waiters)
                    try await Task.sleep(for: .milliseconds(2))
                }
                mostWaiters = max(mostWaiters, trimmer.loop.waiters)
            }
            length = try await redis.xlen(stream.rawValue)
        } finally: {
            _ = try? await redis.del(keys: [stream.rawValue])
            await redis.shutdown()
        }
        #expect(trimmer.loop.runs.current >= periods)
        #expect(trimmer.loop.failures.current == 0)
        #expect(mostWaiters <= 1, "\(mostWaiters) tasks waited on the stop signal at once")
        #expect(trimmer.loop.waiters == 0)
        #expect(length < 200, "\(length) acknowledged entries left untrimmed")
    }
}
