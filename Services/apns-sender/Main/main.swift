import APNsSenderApp
import BuzzKitRuntime

// apns-sender: fan-out of bk:messages, the APNs sender pool on bk:deliveries, the delivery
// ledger and the outbox sweeper. Settings: ServiceSettings plus SenderConfiguration (a bad one
// exits 78).
await ServiceMain.run(
    service: "apns-sender",
    configuration: { _, environment in try SenderConfiguration(environment: environment) }
) { runtime, configuration, _ in
    try APNsSender(runtime: runtime, configuration: configuration).services
}
