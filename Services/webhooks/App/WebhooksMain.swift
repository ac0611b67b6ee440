import BuzzKitRuntime
import Foundation

/// The webhooks process: takes the events producers committed to the outbox, makes them into
/// messages (delivery.sent in batches of up to 100), and sends each, signed as Standard Webhooks
/// says, to its endpoint: at least once, the same webhook-id on every retry, on the retry
/// schedule. Replicas share the work (rows taken with SKIP LOCKED). Settings: ServiceSettings plus
/// WebhooksConfiguration (a bad one exits 78). Run by the `webhooks` executable and by
/// `buzzkit-server`.
public enum WebhooksMain {
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) async -> Never {
        await ServiceMain.run(
            service: "webhooks", environment: environment,
            configuration: { settings, environment in
                try WebhooksConfiguration(consumerName: settings.instanceID, environment: environment)
            }
        ) { runtime, configuration, _ in
            try WebhooksService.makeServices(runtime: runtime, configuration: configuration)
        }
    }
}
