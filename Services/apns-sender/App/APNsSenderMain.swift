import BuzzKitRuntime
import Foundation

/// apns-sender: fan-out of bk:messages, the APNs sender pool on bk:deliveries, the delivery
/// ledger's recording and the outbox sweeper. Settings: ServiceSettings plus SenderConfiguration
/// (a bad one exits 78). Run by the `apns-sender` executable and by `buzzkit-server`.
public enum APNsSenderMain {
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) async -> Never {
        await ServiceMain.run(
            service: "apns-sender", environment: environment,
            configuration: { _, environment in try SenderConfiguration(environment: environment) }
        ) { runtime, configuration, _ in
            try APNsSender(runtime: runtime, configuration: configuration).services
        }
    }
}
