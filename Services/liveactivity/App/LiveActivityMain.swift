import BuzzKitRuntime
import Foundation

/// liveactivity: consumes bk:la (POST /v1/live-activities/send from the gateway), sends each
/// request's Live Activity pushes through APNs, records them in the delivery ledger and answers on
/// the request's reply key. Settings: ServiceSettings plus LiveActivityConfiguration (a bad one
/// exits 78). Run by the `liveactivity` executable and by `buzzkit-server`.
public enum LiveActivityMain {
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) async -> Never {
        await ServiceMain.run(
            service: "liveactivity", environment: environment,
            configuration: { _, environment in try LiveActivityConfiguration(environment: environment) }
        ) { runtime, configuration, _ in
            try LiveActivityService(runtime: runtime, configuration: configuration).services
        }
    }
}
