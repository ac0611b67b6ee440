import Foundation
import BuzzKitRuntime
import IngestApp

// The ingest service: consumes bk:ingest in batches, stores events in Postgres (deduplicated),
// counts receipts, publishes new events on bk:events, and maintains the event partitions.
await ServiceMain.run(service: "ingest") { runtime, _ in
    let configuration = try IngestConfiguration(
        consumerName: runtime.settings.instanceID,
        environment: ProcessInfo.processInfo.environment)
    return IngestService.makeServices(runtime: runtime, configuration: configuration)
}
