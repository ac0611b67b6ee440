// buzzkit-bench: the Swift side of the benchmark scripts in bench/. Each subcommand drives one layer
// and prints figures; the bench/*.sh scripts run it next to the raw baseline and compute ratios.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
    FileHandle.standardError.write(
        Data(
            "usage: buzzkit-bench <http-server|redis-streams|postgres-bulk|post-messages|webhook-sink> [options]\n".utf8
        ))
    exit(2)
}
let rest = Array(arguments.dropFirst())
do {
    switch command {
    case "http-server": try await HTTPServerBench.run(arguments: rest)
    case "redis-streams": try await RedisStreamsBench.run(arguments: rest)
    case "postgres-bulk": try await PostgresBulkBench.run(arguments: rest)
    case "post-messages": try await PostMessagesBench.run(arguments: rest)
    case "webhook-sink": try await WebhookSinkBench.run(arguments: rest)
    default:
        FileHandle.standardError.write(Data("unknown benchmark \(command)\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("benchmark failed: \(error)\n".utf8))
    exit(1)
}
