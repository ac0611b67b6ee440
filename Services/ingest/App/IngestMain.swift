import BuzzKitRuntime
import Foundation

/// The ingest process: consumes bk:ingest in batches, stores events in Postgres (deduplicated),
/// counts receipts, publishes new events on bk:events, and maintains the event partitions.
/// `ingest bench --postgres URL --redis URL [--events N]` runs bench/events_ingest.sh's
/// measurement instead. Run by the `ingest` executable and by `buzzkit-server`.
public enum IngestMain {
    public static func run(
        arguments: [String] = CommandLine.arguments,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async -> Never {
        await ServiceMain.runBenchIfAsked(arguments: arguments) { arguments in
            try await EventsIngestBench.run(arguments: arguments)
        }
        await ServiceMain.run(service: "ingest", environment: environment) { runtime, _ in
            let configuration = try IngestConfiguration(
                consumerName: runtime.settings.instanceID, environment: environment)
            return IngestService.makeServices(runtime: runtime, configuration: configuration)
        }
    }
}
