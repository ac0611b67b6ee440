import Foundation
import BuzzKitRuntime
import IngestApp

// The ingest service: consumes bk:ingest in batches, stores events in Postgres (deduplicated),
// counts receipts, publishes new events on bk:events, and maintains the event partitions.
// `ingest bench --postgres URL --redis URL [--events N]` runs bench/events_ingest.sh's measurement.
if CommandLine.arguments.dropFirst().first == "bench" {
    do {
        let lines = try await EventsIngestBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("bench failed: \(error)\n".utf8))
        exit(1)
    }
}

await ServiceMain.run(service: "ingest") { runtime, _ in
    let configuration = try IngestConfiguration(consumerName: runtime.settings.instanceID,
                                                environment: ProcessInfo.processInfo.environment)
    return IngestService.makeServices(runtime: runtime, configuration: configuration)
}
