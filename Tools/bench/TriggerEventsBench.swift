import BuzzKitContracts
import BuzzKitCore
import BuzzKitRedis
import BuzzKitWire
import Foundation

/// `buzzkit-bench trigger-events --redis URL --tenant UUID [--stream bk:events] [--prefix d]
/// [--subscribers 100000] [--rounds 10] [--per-entry 1] [--name photo.liked] [--id run1]`
///
/// Puts trigger events on `bk:events` as ingest publishes them (one identity's batch an entry),
/// for the workflow benchmarks: `--rounds` events for each of `--subscribers` subscribers
/// `<prefix>0000001…`, round by round (so one subscriber's events are spread over the stream as
/// separate arrivals are), `--per-entry` consecutive events of one subscriber in an entry (1: each
/// event its own entry). Event `r` of a subscriber has data `{"postId": "p1", "actor": <one of 7
/// names>, "n": r}`. Pipelined XADDs of 1,000 entries. Prints `published <events> <entries> <seconds>`.
enum TriggerEventsBench {
    static let actors = ["Ana", "Ben", "Cid", "Dee", "Eve", "Fay", "Gus"]

    static func run(arguments: [String]) async throws {
        var options: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count {
            options[arguments[index].replacingOccurrences(of: "--", with: "")] = arguments[index + 1]
            index += 2
        }
        guard let tenantText = options["tenant"], let tenant = UUID(uuidString: tenantText) else {
            throw BenchUsage("--tenant <uuid> is required")
        }
        let stream = options["stream"] ?? "bk:events"
        let prefix = options["prefix"] ?? "d"
        let subscribers = Int(options["subscribers"] ?? "") ?? 100_000
        let rounds = Int(options["rounds"] ?? "") ?? 10
        let perEntry = max(1, min(Int(options["per-entry"] ?? "") ?? 1, rounds))
        let name = options["name"] ?? "photo.liked"
        let run = options["id"] ?? "run1"
        let client = RedisClient(
            configuration: try RedisConfiguration(url: options["redis"] ?? "redis://127.0.0.1:6379"), logger: .silent())
        defer { client.close() }
        let received = EventTimestamp.microseconds(Date())
        func event(_ s: Int, _ r: Int) -> IngestEntry.Event {
            IngestEntry.Event(
                id: "\(run)-\(s)-\(r)", name: name, timestampMicroseconds: received,
                dataJSON: Array(#"{"postId":"p1","actor":"\#(actors[(s + r) % actors.count])","n":\#(r)}"#.utf8))
        }
        var pending: [[(String, [UInt8])]] = []
        var entries = 0
        let start = ContinuousClock.now
        func flush() async throws {
            guard !pending.isEmpty else { return }
            _ = try await client.xaddBatch(stream, entries: pending)
            entries += pending.count
            pending.removeAll(keepingCapacity: true)
        }
        for first in stride(from: 0, to: rounds, by: perEntry) {
            for s in 1...subscribers {
                let batch = PublishedEventBatch(
                    tenantId: tenant,
                    subscriberId: prefix + String(repeating: "0", count: max(0, 7 - String(s).count)) + String(s),
                    anonymousId: nil, receivedAtMicroseconds: received,
                    events: (first..<min(rounds, first + perEntry)).map { event(s, $0) })
                pending.append(batch.fields)
                if pending.count == 1000 { try await flush() }
            }
        }
        try await flush()
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("published \(subscribers * rounds) \(entries) \(seconds)")
    }
}
