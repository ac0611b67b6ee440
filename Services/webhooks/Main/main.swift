import BuzzKitRuntime
import Foundation
import WebhooksApp

// The webhooks service: takes the events producers committed to the outbox, makes them into
// messages (delivery.sent in batches of up to 100), and sends each, signed as Standard Webhooks
// says, to its endpoint: at least once, the same webhook-id on every retry, on the retry
// schedule. Replicas share the work (rows taken with SKIP LOCKED).
await ServiceMain.run(service: "webhooks") { runtime, _ in
    let configuration = try WebhooksConfiguration(
        consumerName: runtime.settings.instanceID, environment: ProcessInfo.processInfo.environment)
    return try WebhooksService.makeServices(runtime: runtime, configuration: configuration)
}
