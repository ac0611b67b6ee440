// buzzkit-bench: the Swift side of the benchmark scripts in bench/. Each subcommand drives one layer
// and prints figures; the bench/*.sh scripts run it next to the raw baseline and compute ratios.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
    FileHandle.standardError.write(
        Data(
            "usage: buzzkit-bench <http-server|redis-streams|postgres-bulk|post-messages|trigger-events|events-ingest|workflows|webhooks|webhook-sink> [options]\n"
                .utf8))
    exit(2)
}
let rest = Array(arguments.dropFirst())
do {
    switch command {
    case "http-server": try await HTTPServerBench.run(arguments: rest)
    case "redis-streams": try await RedisStreamsBench.run(arguments: rest)
    case "postgres-bulk": try await PostgresBulkBench.run(arguments: rest)
    case "post-messages": try await PostMessagesBench.run(arguments: rest)
    case "trigger-events": try await TriggerEventsBench.run(arguments: rest)
    // The services' own measurements: their parts run in this process (their App modules are
    // libraries), so no service executable carries benchmark code.
    case "events-ingest": printLines(try await EventsIngestBench.run(arguments: rest))
    case "workflows": printLines(try await WorkflowBench.run(arguments: rest))
    case "webhooks": printLines(try await WebhooksBench.run(arguments: rest))
    case "webhook-sink": try await WebhookSinkBench.run(arguments: rest)
    default:
        FileHandle.standardError.write(Data("unknown benchmark \(command)\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("benchmark failed: \(error)\n".utf8))
    exit(1)
}

/// The `name value` lines a measurement returns, for its bench script to read.
func printLines(_ lines: [String]) {
    FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
}
