import BuzzKitRuntime
import Foundation

/// The workflow process: consumes bk:events (triggers start runs, cancelOn and waitFor events reach
/// running runs), and advances runs whose timer or inbox is due, sending through the message path.
/// Replicas share the work (runs claimed with SKIP LOCKED, one consumer group). Settings:
/// ServiceSettings plus WorkflowConfiguration (a bad one exits 78). Run by the `workflow`
/// executable and by `buzzkit-server`.
public enum WorkflowMain {
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) async -> Never {
        await ServiceMain.run(
            service: "workflow", environment: environment,
            configuration: { settings, environment in
                try WorkflowConfiguration(consumerName: settings.instanceID, environment: environment)
            }
        ) { runtime, configuration, _ in
            WorkflowService.makeServices(runtime: runtime, configuration: configuration)
        }
    }
}
