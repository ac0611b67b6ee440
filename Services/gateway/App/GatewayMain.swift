import BuzzKitCore
import BuzzKitRuntime
import Foundation

/// The gateway process: the public HTTP API. Reads its own settings (BUZZKIT_SECRET_KEY, rate
/// limits; see GatewayConfiguration) before anything starts, so a bad configuration fails at once
/// with 78. Run by the `gateway` executable and by `buzzkit-server` (the container image's one binary).
public enum GatewayMain {
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) async -> Never {
        let configuration: GatewayConfiguration
        do {
            configuration = try GatewayConfiguration(environment: environment)
        } catch {
            Logger(label: "gateway").critical("invalid configuration", metadata: ["error": error.description])
            exit(78)  // EX_CONFIG
        }
        await ServiceMain.run(service: "gateway", environment: environment) { runtime, router in
            let gateway = try Gateway(
                configuration: configuration, postgres: runtime.postgres, redis: runtime.redis,
                logger: runtime.logger, metrics: runtime.metrics)
            gateway.register(on: &router)
            return gateway.services
        }
    }
}
