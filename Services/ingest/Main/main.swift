import BuzzKitRuntime
import IngestApp

// The ingest service: consumes bk:ingest in batches, stores events in Postgres (deduplicated),
// counts receipts, publishes new events on bk:events, and maintains the event partitions.
// Settings: ServiceSettings plus IngestConfiguration (a bad one exits 78).
await ServiceMain.run(
    service: "ingest",
    configuration: { settings, environment in
        try IngestConfiguration(consumerName: settings.instanceID, environment: environment)
    }
) { runtime, configuration, _ in
    IngestService.makeServices(runtime: runtime, configuration: configuration)
}
