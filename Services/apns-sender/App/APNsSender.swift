import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitPush
import BuzzKitRedis
import BuzzKitRuntime
import Foundation

/// The apns-sender service: fans messages out into deliveries (`bk:messages`, group
/// `apns-fanout`), sends delivery chunks through APNs and writes the ledger (`bk:deliveries`,
/// group `apns-sender`, shared by every replica), and sweeps the outbox.
///
/// ```swift
/// await ServiceMain.run(
///     service: "apns-sender", configuration: { _, env in try SenderConfiguration(environment: env) }
/// ) { runtime, configuration, _ in
///     try APNsSender(runtime: runtime, configuration: configuration).services
/// }
/// ```
/// Every statement it runs on the ledger's tables is `BuzzKitLedger`'s (`Ledger`).
///
/// Guarantees: a chunk of deliveries is claimed (`queued` -> `sending`) by exactly one replica in
/// one statement and only the claimer sends it (or, once it died, the replica that took its claim
/// over); each delivery is written once, with its outcome; a message completes once every
/// delivery of it is decided. Every push of a delivery carries the same `apns-id` and
/// `apns-collapse-id`, so a device shows it once even when it arrived twice (a retry after a
/// timeout APNs had in fact taken, a re-send after a kill).
/// SIGTERM: no new entries are read; chunks in flight are sent, recorded and acked; exact.
/// SIGKILL: chunks the replica had not claimed are taken over by another replica after
/// `claimIdle` and sent; deliveries it had claimed (`sending`) may or may not have reached
/// APNs: another replica's sweeper sends them again after `staleSending`, under the same
/// `apns-id` and `apns-collapse-id` (a device that had the first push shows one notification),
/// and the ledger records the lost attempt as unknown before the re-send's. A message whose last
/// chunk it recorded but did not test for completion is completed by the sweeper. The sweeper
/// also records as lost the Live Activity requests a stopped liveactivity replica had decided.
public struct APNsSender: Sendable {
    public let runtime: ServiceRuntime
    public let configuration: SenderConfiguration
    let fanOut: FanOut
    let direct: DirectMessages
    let sender: DeliverySender
    let clients: APNsClientPool
    let ledger: Ledger

    public init(
        runtime: ServiceRuntime, configuration: SenderConfiguration,
        messages: StreamName = .messages, deliveries: StreamName = .deliveries
    ) throws {
        self.runtime = runtime
        self.configuration = configuration
        self.messagesStream = messages
        self.deliveriesStream = deliveries
        let logger = runtime.logger
        let credentials = try TenantCredentialStore(
            postgres: runtime.postgres, secretKey: configuration.secretKey,
            ttl: configuration.credentialsTTL)
        clients = APNsClientPool(settings: configuration.clientSettings, logger: logger.with(["component": "apns"]))
        let metrics = SenderMetrics(registry: runtime.metrics)
        let ledger = Ledger(postgres: runtime.postgres, logger: logger)
        self.ledger = ledger
        fanOut = FanOut(
            ledger: ledger, redis: runtime.redis, credentials: credentials, deliveries: deliveries,
            pageSize: configuration.pageSize, chunkSize: configuration.chunkSize, logger: logger, metrics: metrics)
        sender = DeliverySender(
            ledger: ledger, credentials: credentials,
            messages: PreparedMessageCache(postgres: runtime.postgres), clients: clients,
            configuration: configuration, instance: runtime.settings.instanceID, logger: logger,
            metrics: metrics)
        direct = DirectMessages(
            ledger: ledger, credentials: credentials, sender: sender,
            instance: runtime.settings.instanceID, logger: logger, metrics: metrics)
    }

    let messagesStream: StreamName
    let deliveriesStream: StreamName

    /// The APNs clients, the outbox sweeper, the delivery consumer, the fan-out consumer and the
    /// direct consumers, in the order `ServiceGroup` starts them. It stops them the other way,
    /// each `run()` returned before the next is asked: the direct consumers finish their batches,
    /// the fan-out its page, the delivery consumer its in-flight chunks (sent, recorded, acked),
    /// and only then do the APNs clients close.
    public var services: [any Service] {
        let configuration = configuration
        let fanOut = fanOut
        let sender = sender
        let direct = direct
        let fanoutService = StreamConsumerService(
            runtime: runtime, stream: messagesStream.rawValue, group: ConsumerGroup.fanout,
            configure: { c in
                c.batchSize = max(4, configuration.fanoutConcurrency)
                c.maxConcurrentHandlers = configuration.fanoutConcurrency
                c.claimIdleTime = configuration.claimIdle
                c.reclaimInterval = configuration.reclaimInterval
            },
            handler: { entry in
                let messages = try MessageEntry(entry: entry)
                for id in messages.messageIds {
                    try await fanOut.handle(MessageEntry(tenantId: messages.tenantId, messageId: id))
                }
            })
        let deliveryService = StreamConsumerService(
            runtime: runtime, stream: deliveriesStream.rawValue, group: ConsumerGroup.sender,
            configure: { c in
                c.batchSize = configuration.concurrency
                c.maxConcurrentHandlers = configuration.concurrency
                // Each chunk's slot takes the next chunk as soon as it is recorded: a batch of
                // chunks no longer waits for its slowest before the next starts.
                c.continuous = true
                c.claimIdleTime = configuration.claimIdle
                c.reclaimInterval = configuration.reclaimInterval
            },
            handler: { entry in
                // A version 1 entry's deliveries became a chunk row in migration 0016 (see DeliveryChunk).
                guard !DeliveryChunk.isSuperseded(entry) else { return }
                try await sender.handle(try DeliveryChunk(entry: entry))
            })
        // Direct messages in batches, `directConsumers` batches at once per replica (each its own
        // consumer of the group, so one batch's APNs round trips overlap another's statements).
        let directServices = (0..<configuration.directConsumers).map { number in
            var settings = StreamConsumer.Configuration(
                stream: messagesStream.direct.rawValue, group: ConsumerGroup.direct,
                consumer: "\(runtime.settings.instanceID)-direct-\(number)")
            settings.batchSize = configuration.directBatchSize
            settings.claimIdleTime = configuration.claimIdle
            settings.reclaimInterval = configuration.reclaimInterval
            return StreamConsumerService(
                consumer: StreamConsumer(
                    client: runtime.redis, configuration: settings,
                    logger: runtime.logger.with(["stream": settings.stream, "group": settings.group]),
                    batchHandler: { entries in
                        await Self.handleDirect(entries, direct: direct, fanOut: fanOut, configuration: configuration)
                    }))
        }
        let sweeper = OutboxSweeper(
            ledger: ledger, redis: runtime.redis, messages: messagesStream,
            interval: configuration.sweepInterval, requeueAfter: configuration.requeueAfter,
            takeOver: { try await sender.takeOverStaleClaims() },
            orphans: { [deliveriesStream, ledger] in
                try await Self.requeueOrphans(
                    ledger: ledger, redis: runtime.redis, stream: deliveriesStream,
                    olderThan: configuration.requeueAfter)
            },
            trimmedStreams: [messagesStream, messagesStream.direct, deliveriesStream], logger: runtime.logger,
            metrics: runtime.metrics)
        let retention = LedgerRetentionService(
            postgres: runtime.postgres, configuration: configuration, logger: runtime.logger, metrics: runtime.metrics)
        return [clients, sweeper, retention, deliveryService, fanoutService] + directServices
    }

    /// Puts orphan chunks on `bk:deliveries` again: queued chunks enqueued more than `olderThan`
    /// ago and before what the sending group has read and acknowledged (so a chunk still waiting in
    /// a backlog is not added twice; with no group, after Redis lost its data, every old one).
    static func requeueOrphans(
        ledger: Ledger, redis: RedisClient, stream: StreamName, olderThan: Duration
    ) async throws -> Int {
        let boundary = try await redis.acknowledgedBoundary(stream.rawValue)
        let before = boundary.map { Date(timeIntervalSince1970: Double($0.milliseconds) / 1000 - 1) } ?? Date()
        let orphans = try await ledger.orphans(olderThan: olderThan, before: before)
        if !orphans.isEmpty { try await redis.xaddBatch(stream.rawValue, entries: orphans.map(\.fields)) }
        return orphans.count
    }

    /// A batch of the direct stream: `DirectMessages.take` sends what it can in one go; each entry
    /// it did not take goes through `FanOut.handle` (which ends it as before: nothing to do for a
    /// message already sent, the tenant's credential problem recorded, a fan-out resumed), at most
    /// `fanoutConcurrency` at once. A failure leaves the entries it concerns pending (retried).
    static func handleDirect(
        _ entries: [StreamEntry], direct: DirectMessages, fanOut: FanOut, configuration: SenderConfiguration
    ) async -> [StreamEntryID: any Error] {
        var failures: [StreamEntryID: any Error] = [:]
        // Every message of the batch in entry order, with the entry it came in.
        var messages: [(entry: StreamEntryID, message: MessageEntry)] = []
        for entry in entries {
            do {
                let parsed = try MessageEntry(entry: entry)
                for id in parsed.messageIds {
                    messages.append((entry.id, MessageEntry(tenantId: parsed.tenantId, messageId: id)))
                }
            } catch {
                failures[entry.id] = error
            }
        }
        // At most BUZZKIT_DIRECT_BATCH_SIZE messages per take (a workflow's entry carries up to 100),
        // one take after the other, so a device's pushes still go out in the order they were made.
        var taken = Set<UUID>()
        let size = max(1, configuration.directBatchSize)
        for start in stride(from: 0, to: messages.count, by: size) {
            let slice = messages[start..<min(start + size, messages.count)]
            do {
                taken.formUnion(try await direct.take(slice.map(\.message)))
            } catch {
                for (id, _) in slice { failures[id] = error }
            }
        }
        let rest = messages.filter { !taken.contains($0.message.messageId) && failures[$0.entry] == nil }
        guard !rest.isEmpty else { return failures }
        let lanes = min(rest.count, max(1, configuration.fanoutConcurrency))
        await withTaskGroup(of: [StreamEntryID: any Error].self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    var failed: [StreamEntryID: any Error] = [:]
                    for (id, message) in stride(from: lane, to: rest.count, by: lanes).map({ rest[$0] }) {
                        do { try await fanOut.handle(message) } catch { failed[id] = error }
                    }
                    return failed
                }
            }
            for await some in group { failures.merge(some) { first, _ in first } }
        }
        return failures
    }
}
