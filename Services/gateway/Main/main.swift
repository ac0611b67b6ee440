import BuzzKitCore
import BuzzKitRuntime
import Foundation
import GatewayApp

// The gateway: the public HTTP API. Reads its own settings (BUZZKIT_SECRET_KEY, rate limits; see
// GatewayConfiguration) before anything starts, so a bad configuration fails at once with 78.
let gatewayConfiguration: GatewayConfiguration
do {
    gatewayConfiguration = try GatewayConfiguration(environment: ProcessInfo.processInfo.environment)
} catch {
    Logger(label: "gateway").critical("invalid configuration", metadata: ["error": error.description])
    exit(78)  // EX_CONFIG
}

await ServiceMain.run(service: "gateway") { runtime, router in
    let gateway = try Gateway(
        configuration: gatewayConfiguration, postgres: runtime.postgres, redis: runtime.redis,
        logger: runtime.logger, metrics: runtime.metrics)
    gateway.register(on: &router)
    return gateway.services
}
