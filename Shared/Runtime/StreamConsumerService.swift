import BuzzKitCore
import BuzzKitRedis

/// Runs a `StreamConsumer` as a `Service`: on shutdown it stops reading, lets in-flight handlers
/// finish and acknowledges exactly the entries whose handlers completed.
public struct StreamConsumerService: Service {
    public let consumer: StreamConsumer
    public var name: String { "consumer.\(consumer.configuration.stream)" }

    public init(consumer: StreamConsumer) {
        self.consumer = consumer
    }

    /// A consumer of `stream` in `group`, named after this replica, with the runtime's Redis and logger.
    public init(
        runtime: ServiceRuntime, stream: String, group: String,
        configure: (inout StreamConsumer.Configuration) -> Void = { _ in },
        handler: @escaping StreamConsumer.Handler
    ) {
        var configuration = StreamConsumer.Configuration(
            stream: stream, group: group, consumer: runtime.settings.instanceID)
        configure(&configuration)
        self.consumer = StreamConsumer(
            client: runtime.redis, configuration: configuration,
            logger: runtime.logger.with(["stream": stream, "group": group]),
            handler: handler)
    }

    public func run() async throws { await consumer.run() }

    public func shutdown() async { consumer.stop() }
}
