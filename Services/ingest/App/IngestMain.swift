import BuzzKitRuntime
import Foundation

/// The ingest process: consumes bk:ingest in batches, stores events in Postgres (deduplicated),
/// counts receipts, publishes new events on bk:events, and maintains the event partitions.
/// Settings: ServiceSettings plus IngestConfiguration (a bad one exits 78). Run by the `ingest`
/// executable and by `buzzkit-server`.
public enum IngestMain {
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) async -> Never {
        await ServiceMain.run(
            service: "ingest", environment: environment,
            configuration: { settings, environment in
                try IngestConfiguration(consumerName: settings.instanceID, environment: environment)
            }
        ) { runtime, configuration, _ in
            IngestService.makeServices(runtime: runtime, configuration: configuration)
        }
    }
}
