import BuzzKitCore
import BuzzKitRuntime
import Foundation

/// The apns-sender process: fan-out of bk:messages, the APNs sender pool on bk:deliveries, the
/// delivery ledger and the outbox sweeper. Settings: ServiceSettings plus SenderConfiguration.
/// Run by the `apns-sender` executable and by `buzzkit-server` (the container image's one binary).
public enum APNsSenderMain {
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) async -> Never {
        let configuration: SenderConfiguration
        do {
            configuration = try SenderConfiguration(environment: environment)
        } catch {
            Logger(label: "apns-sender").critical("invalid configuration", metadata: ["error": error.description])
            exit(78)  // EX_CONFIG
        }
        await ServiceMain.run(service: "apns-sender", environment: environment) { runtime, _ in
            try APNsSender(runtime: runtime, configuration: configuration).services
        }
    }
}
