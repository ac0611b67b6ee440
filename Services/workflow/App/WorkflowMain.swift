import BuzzKitRuntime
import Foundation

/// The workflow process: consumes bk:events (triggers start runs, cancelOn and waitFor events reach
/// running runs), and advances runs whose timer or inbox is due, sending through the message path.
/// Replicas share the work (runs claimed with SKIP LOCKED, one consumer group).
/// `workflow bench --postgres URL --redis URL [--runs N --rate R --seconds S --trigger-events N
/// --only lateness|triggers]` runs bench/workflows.sh's measurements instead. Run by the `workflow`
/// executable and by `buzzkit-server`.
public enum WorkflowMain {
    public static func run(
        arguments: [String] = CommandLine.arguments,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async -> Never {
        await ServiceMain.runBenchIfAsked(arguments: arguments) { arguments in
            try await WorkflowBench.run(arguments: arguments)
        }
        await ServiceMain.run(service: "workflow", environment: environment) { runtime, _ in
            let configuration = try WorkflowConfiguration(
                consumerName: runtime.settings.instanceID, environment: environment)
            return WorkflowService.makeServices(runtime: runtime, configuration: configuration)
        }
    }
}
