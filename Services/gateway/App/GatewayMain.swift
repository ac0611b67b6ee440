import BuzzKitRuntime
import Foundation

/// The gateway process: the public HTTP API. Its own settings (BUZZKIT_SECRET_KEY, rate limits;
/// see GatewayConfiguration) are read with the shared ones before anything starts: a bad one exits
/// 78. Run by the `gateway` executable and by `buzzkit-server` (the container image's one binary).
public enum GatewayMain {
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) async -> Never {
        await ServiceMain.run(
            service: "gateway", environment: environment,
            configuration: { _, environment in try GatewayConfiguration(environment: environment) }
        ) { runtime, configuration, router in
            let gateway = try Gateway(
                configuration: configuration, postgres: runtime.postgres, redis: runtime.redis,
                logger: runtime.logger, metrics: runtime.metrics)
            gateway.register(on: &router)
            return gateway.services
        }
    }
}
