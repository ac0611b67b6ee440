import Foundation
import BuzzKitRuntime
import WorkflowApp

// The workflow service: consumes bk:events (triggers start runs, cancelOn and waitFor events
// reach running runs), and advances runs whose timer or inbox is due, sending through the
// message path. Replicas share the work (runs claimed with SKIP LOCKED, one consumer group).
// `workflow bench --postgres URL --redis URL [--runs N --rate R --seconds S --trigger-events N
// --only lateness|triggers]` runs bench/workflows.sh's measurements.
await ServiceMain.runBenchIfAsked { arguments in try await WorkflowBench.run(arguments: arguments) }

await ServiceMain.run(service: "workflow") { runtime, _ in
    let configuration = try WorkflowConfiguration(
        consumerName: runtime.settings.instanceID,
        environment: ProcessInfo.processInfo.environment)
    return WorkflowService.makeServices(runtime: runtime, configuration: configuration)
}
