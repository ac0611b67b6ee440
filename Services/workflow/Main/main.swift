import Foundation
import BuzzKitRuntime
import WorkflowApp

// The workflow service: consumes bk:events (triggers start runs, cancelOn and waitFor events
// reach running runs), and advances runs whose timer or inbox is due, sending through the
// message path. Replicas share the work (runs claimed with SKIP LOCKED, one consumer group).
await ServiceMain.run(service: "workflow") { runtime, _ in
    let configuration = try WorkflowConfiguration(
        consumerName: runtime.settings.instanceID,
        environment: ProcessInfo.processInfo.environment)
    return WorkflowService.makeServices(runtime: runtime, configuration: configuration)
}
