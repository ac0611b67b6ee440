import BuzzKitRuntime
import LiveActivityApp

// liveactivity: consumes bk:la (POST /v1/live-activities/send from the gateway), sends each
// request's Live Activity pushes through APNs, records them in the delivery ledger and answers
// on the request's reply key. Settings: ServiceSettings plus LiveActivityConfiguration (a bad
// one exits 78).
await ServiceMain.run(
    service: "liveactivity",
    configuration: { _, environment in try LiveActivityConfiguration(environment: environment) }
) { runtime, configuration, _ in
    try LiveActivityService(runtime: runtime, configuration: configuration).services
}
