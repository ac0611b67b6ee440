import BuzzKitCore
import BuzzKitRuntime
import Foundation

/// The liveactivity process: consumes bk:la (POST /v1/live-activities/send from the gateway),
/// sends each request's Live Activity pushes through APNs, records them in the delivery ledger
/// and answers on the request's reply key. Settings: ServiceSettings plus
/// LiveActivityConfiguration. Run by the `liveactivity` executable and by `buzzkit-server`.
public enum LiveActivityMain {
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) async -> Never {
        let configuration: LiveActivityConfiguration
        do {
            configuration = try LiveActivityConfiguration(environment: environment)
        } catch {
            Logger(label: "liveactivity").critical("invalid configuration", metadata: ["error": error.description])
            exit(78)  // EX_CONFIG
        }
        await ServiceMain.run(service: "liveactivity", environment: environment) { runtime, _ in
            try LiveActivityService(runtime: runtime, configuration: configuration).services
        }
    }
}
