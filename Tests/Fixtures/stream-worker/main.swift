// A service process for lifecycle tests: consumes FIXTURE_STREAM with a handler that marks the
// entry started in Redis, then works until the test sets `<stream>:release` (at most 30 s), then
// marks it done. Tests send SIGTERM mid-handler, release it, and check that the handler completed
// and its entry was acknowledged before the process exited.
import BuzzKitRedis
import BuzzKitRuntime
import Foundation

let environment = ProcessInfo.processInfo.environment
let stream = environment["FIXTURE_STREAM"] ?? "fixture:stream"
let group = environment["FIXTURE_GROUP"] ?? "fixture"
let batchSize = environment["FIXTURE_BATCH_SIZE"].flatMap { Int($0) } ?? 100

await ServiceMain.run(service: "stream-worker") { runtime, _ in
    let redis = runtime.redis
    let consumer = StreamConsumerService(
        runtime: runtime, stream: stream, group: group,
        configure: {
            $0.blockTime = .milliseconds(200)
            $0.batchSize = batchSize
        }
    ) { entry in
        _ = try await redis.set("\(stream):started:\(entry.id)", "1")
        let deadline = ContinuousClock.now + .seconds(30)
        while try await redis.get("\(stream):release") == nil, ContinuousClock.now < deadline {
            // A cancelled handler throws here and never counts as done.
            try await Task.sleep(for: .milliseconds(20))
        }
        _ = try await redis.set("\(stream):done:\(entry.id)", "1")
    }
    return [consumer]
}
