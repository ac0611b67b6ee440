import APNsSenderApp
import BuzzKitCore
import BuzzKitRuntime
import Foundation

// apns-sender: fan-out of bk:messages, the APNs sender pool on bk:deliveries, the delivery
// ledger and the outbox sweeper. Settings: ServiceSettings plus SenderConfiguration.
let senderConfiguration: SenderConfiguration
do {
    senderConfiguration = try SenderConfiguration(environment: ProcessInfo.processInfo.environment)
} catch {
    Logger(label: "apns-sender").critical("invalid configuration", metadata: ["error": error.description])
    exit(78)  // EX_CONFIG
}

await ServiceMain.run(service: "apns-sender") { runtime, _ in
    try APNsSender(runtime: runtime, configuration: senderConfiguration).services
}
