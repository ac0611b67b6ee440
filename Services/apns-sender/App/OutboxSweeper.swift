import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitRedis
import Foundation

/// The durability half of the outbox rule: the gateway inserts a message, then adds it to
/// `bk:messages`; when that XADD fails (or its entry is lost with Redis's last second, or
/// dead-lettered), the message would sit in `queued` forever. Every `interval` this sweeper takes
/// messages untouched for `requeueAfter` in `queued` or `fanning_out` (whatever their age),
/// touches them in the same statement (`Ledger.touchUnfinished`: `FOR UPDATE SKIP LOCKED`,
/// so concurrent replicas never pick the same one) and adds them to `bk:messages` (or its direct
/// sibling) again. A fan-out is idempotent, so an extra entry costs a little work, never a double
/// send.
///
/// It completes the messages a replica left `fanned_out` with nothing pending (it stopped between
/// recording a message's last chunk and the completion test that follows), `fanned_out` for longer
/// than `requeueAfter`: at most 500 a pass, oldest first (`Ledger.completeStragglers`).
///
/// It also runs `takeOver` (`DeliverySender.takeOverStaleClaims`): chunks a replica claimed and
/// never recorded (it died mid-send), claimed longer than `BUZZKIT_SENDER_STALE_SENDING`, are sent
/// again by this replica under the same `apns-id` and `apns-collapse-id` (a device that had the
/// first push shows one notification); and `orphans` (`APNsSender.requeueOrphans`): queued chunks
/// whose `bk:deliveries` entry never came or was lost with Redis are added again.
///
/// And it caps `trimmedStreams` (`bk:messages`, `bk:deliveries`) below what every consumer group
/// has acknowledged: an entry is acknowledged only after its fan-out page or chunk is recorded in
/// Postgres, so Redis keeps only work not yet done.
struct OutboxSweeper: Service {
    let name = "outbox-sweeper"
    let ledger: Ledger
    let redis: RedisClient
    let messages: StreamName
    let interval: Duration
    let requeueAfter: Duration
    let takeOver: (@Sendable () async throws -> Int)?
    let orphans: (@Sendable () async throws -> Int)?
    let trimmedStreams: [StreamName]
    let logger: Logger
    private let loop: BackgroundLoop

    init(
        ledger: Ledger, redis: RedisClient, messages: StreamName, interval: Duration, requeueAfter: Duration,
        takeOver: (@Sendable () async throws -> Int)? = nil, orphans: (@Sendable () async throws -> Int)? = nil,
        trimmedStreams: [StreamName] = [], logger: Logger, metrics: MetricsRegistry
    ) {
        self.ledger = ledger
        self.redis = redis
        self.messages = messages
        self.interval = interval
        self.requeueAfter = requeueAfter
        self.takeOver = takeOver
        self.orphans = orphans
        self.trimmedStreams = trimmedStreams
        self.logger = logger
        loop = BackgroundLoop(name: "outbox-sweeper", interval: interval, logger: logger, metrics: metrics)
    }

    /// A sweep and the trims every `interval`; a failed sweep is logged and counted by the loop
    /// after the trims ran.
    func run() async throws {
        await loop.run {
            var failure: (any Error)?
            do {
                try await sweep()
            } catch {
                failure = error
            }
            for stream in trimmedStreams {
                do {
                    try await redis.trimAcknowledged(stream.rawValue)
                } catch {
                    logger.debug(
                        "stream trim failed", metadata: ["stream": stream.rawValue, "error": "\(error)"])
                }
            }
            if let failure { throw failure }
        }
    }

    func shutdown() async { loop.stop() }

    /// One pass; returns how many messages were re-enqueued.
    @discardableResult
    func sweep() async throws -> Int {
        let stale = try await ledger.touchUnfinished(olderThan: requeueAfter)
        if !stale.isEmpty {
            // Where the producer put it: a direct message on the direct stream, unless a fan-out of
            // it had begun (only the page-by-page fan-out leaves a message `fanning_out`).
            var byStream: [StreamName: [[(String, [UInt8])]]] = [:]
            for message in stale {
                let entry = MessageEntry(tenantId: message.tenantId, messageId: message.id)
                let fanningOut = message.status == .fanningOut
                let stream = (message.target.map { $0.isDirect } ?? false) && !fanningOut ? messages.direct : messages
                byStream[stream, default: []].append(entry.fields)
            }
            for (stream, entries) in byStream { try await redis.xaddBatch(stream.rawValue, entries: entries) }
            logger.notice("outbox sweeper re-enqueued messages", metadata: ["count": String(stale.count)])
        }
        if let takeOver {
            do {
                _ = try await takeOver()
            } catch {
                logger.warning("taking over a stopped replica's chunks failed", metadata: ["error": "\(error)"])
            }
        }
        if let orphans {
            do {
                let count = try await orphans()
                if count > 0 { logger.notice("outbox sweeper re-enqueued chunks", metadata: ["count": String(count)]) }
            } catch {
                logger.warning("re-enqueueing orphan chunks failed", metadata: ["error": "\(error)"])
            }
        }
        do {
            let completed = try await ledger.completeStragglers(olderThan: requeueAfter)
            if completed > 0 {
                logger.notice("outbox sweeper completed messages", metadata: ["count": String(completed)])
            }
        } catch {
            logger.warning("completing stragglers failed", metadata: ["error": "\(error)"])
        }
        return stale.count
    }
}
