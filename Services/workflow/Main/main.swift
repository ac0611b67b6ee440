import BuzzKitRuntime
import WorkflowApp

// The workflow service: consumes bk:events (triggers start runs, cancelOn and waitFor events
// reach running runs), and advances runs whose timer or inbox is due, sending through the
// message path. Replicas share the work (runs claimed with SKIP LOCKED, one consumer group).
// Settings: ServiceSettings plus WorkflowConfiguration (a bad one exits 78).
await ServiceMain.run(
    service: "workflow",
    configuration: { settings, environment in
        try WorkflowConfiguration(consumerName: settings.instanceID, environment: environment)
    }
) { runtime, configuration, _ in
    WorkflowService.makeServices(runtime: runtime, configuration: configuration)
}
