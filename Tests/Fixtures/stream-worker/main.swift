// A service process for lifecycle tests: consumes FIXTURE_STREAM with a handler that marks the
// entry started in Redis, works for FIXTURE_HANDLER_DELAY_MS, then marks it done. Tests send it
// SIGTERM mid-handler and check that the handler completed and its entry was acknowledged.
import BuzzKitRedis
import BuzzKitRuntime
import Foundation

let environment = ProcessInfo.processInfo.environment
let stream = environment["FIXTURE_STREAM"] ?? "fixture:stream"
let group = environment["FIXTURE_GROUP"] ?? "fixture"
let delay = Int(environment["FIXTURE_HANDLER_DELAY_MS"] ?? "") ?? 1000

await ServiceMain.run(service: "stream-worker") { runtime, _ in
    let redis = runtime.redis
    let consumer = StreamConsumerService(runtime: runtime, stream: stream, group: group,
                                         configure: { $0.blockTime = .milliseconds(200) }) { entry in
        _ = try await redis.set("\(stream):started:\(entry.id)", "1")
        try await Task.sleep(for: .milliseconds(delay))  // a cancelled handler must not count as done
        _ = try await redis.set("\(stream):done:\(entry.id)", "1")
    }
    return [consumer]
}
