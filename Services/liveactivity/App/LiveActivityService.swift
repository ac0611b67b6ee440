import BuzzKitContracts
import BuzzKitCore
import BuzzKitPush
import BuzzKitRedis
import BuzzKitRuntime
import Foundation

/// The liveactivity service: consumes `bk:la` (group `liveactivity`, shared by every replica),
/// sends each request's pushes through the APNs client pool (`LiveActivitySender`) and answers
/// on the request's reply key.
///
/// ```swift
/// await ServiceMain.run(service: "liveactivity") { runtime, _ in
///     try LiveActivityService(runtime: runtime, configuration: LiveActivityConfiguration(environment: env)).services
/// }
/// ```
/// SIGTERM: no new requests are read; those in flight are sent, recorded, answered and acked.
/// SIGKILL: a request the replica had read but not yet decided is claimed by another replica
/// after `claimIdle` and handled there; one it had decided (its message row exists) is
/// answered from the ledger by the replica that claims it, never sent again.
public struct LiveActivityService: Sendable {
    public let runtime: ServiceRuntime
    public let configuration: LiveActivityConfiguration
    let stream: StreamName
    let sender: LiveActivitySender
    let clients: APNsClientPool

    public init(runtime: ServiceRuntime, configuration: LiveActivityConfiguration, stream: StreamName = .liveActivities)
        throws
    {
        self.runtime = runtime
        self.configuration = configuration
        self.stream = stream
        let credentials = try TenantCredentialStore(
            postgres: runtime.postgres, secretKey: configuration.secretKey,
            ttl: configuration.credentialsTTL)
        clients = APNsClientPool(settings: configuration.clients, logger: runtime.logger.with(["component": "apns"]))
        sender = LiveActivitySender(
            postgres: runtime.postgres, redis: runtime.redis, credentials: credentials, clients: clients,
            configuration: configuration, instance: runtime.settings.instanceID,
            logger: runtime.logger)
    }

    /// The APNs clients, the stream trimmer and the consumer, in the order `ServiceGroup` starts
    /// them. It stops them the other way, each `run()` returned before the next is asked: the
    /// consumer finishes its requests in flight (sent, recorded, answered, acked), and only then
    /// do the APNs clients close.
    public var services: [any Service] {
        let configuration = configuration, sender = sender
        let consumer = StreamConsumerService(
            runtime: runtime, stream: stream.rawValue, group: ConsumerGroup.liveActivity,
            configure: { c in
                c.batchSize = configuration.concurrency
                c.maxConcurrentHandlers = configuration.concurrency
                c.claimIdleTime = configuration.claimIdle
                c.reclaimInterval = configuration.reclaimInterval
            },
            handler: { entry in try await sender.handle(try LiveActivityEntry(entry: entry)) })
        return [clients, StreamTrimmer(redis: runtime.redis, stream: stream, logger: runtime.logger), consumer]
    }
}

/// Drops the `bk:la` entries every group acknowledged, every 10 s (an entry's work is in Postgres
/// once it is acknowledged).
struct StreamTrimmer: Service {
    let name = "trim.bk:la"
    let redis: RedisClient
    let stream: StreamName
    let logger: Logger
    let stopped = OneShot<Void>()

    func run() async throws {
        while !stopped.isFulfilled {
            _ = await withDeadline(.seconds(10), onTimeout: ()) { await stopped.value }
            do { try await redis.trimAcknowledged(stream.rawValue) } catch {
                logger.debug("trimming the stream failed", metadata: ["error": "\(error)", "stream": stream.rawValue])
            }
        }
    }

    func shutdown() async { stopped.fulfill(()) }
}
