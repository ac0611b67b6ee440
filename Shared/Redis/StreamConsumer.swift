public import BuzzKitCore
import Foundation
import Synchronization

/// The consumer-group runner every service uses: at-least-once processing of one stream.
///
/// - Reads with `XREADGROUP ... BLOCK` on a connection of its own (on its own thread). While a
///   batch's handlers run, the next batch is already being read (read-ahead, unless
///   `readAhead` is off), so at most 2 x `batchSize` entries are delivered to this consumer and
///   not yet acked.
/// - Runs handlers with at most `maxConcurrentHandlers` at once and acks (`XACK`, one per batch)
///   only the entries whose handler returned, as soon as the batch's handlers are done. A
///   `continuous` consumer instead starts the next entry's handler as soon as any one ends, and
///   acks the entries as they end (`windowLoop`).
/// - A batch handler may answer its batch's work (`AnsweringBatchHandler`): its commands go out
///   in the `XACK`'s round trip, ahead of it.
/// - A handler that throws leaves its entry pending and records the error in `errorsKey`.
/// - Entries pending longer than `claimIdleTime` with any consumer (a dead one, or this one after a
///   failure) are reclaimed with `XAUTOCLAIM` at startup and every `reclaimInterval`, then retried.
///   While handlers run, their consumer renews its claim (`XCLAIM … JUSTID`) every third of
///   `claimIdleTime`, so a slow handler is not taken over and run twice.
/// - An entry that failed on its `maxDeliveries`-th delivery (or was delivered more often than that)
///   is moved to the dead-letter stream with its fields plus `dead.stream`, `dead.group`, `dead.id`,
///   `dead.consumer`, `dead.deliveries`, `dead.error`; the XADD and XACK are one Lua script.
///   The entries behind it keep flowing.
/// - `stop()` (or cancelling the task running `run()`) ends the loop: `run()` returns once the
///   handlers in flight finished and their acks were sent; nothing unfinished is acked. A batch
///   already read ahead when `stop()` came is handled (and acked) too rather than left pending. Cancelling
///   the task also cancels the handlers' tasks (`stop()` does not).
/// - Redis errors (restart, network) are logged and retried with backoff; a group that vanished
///   (NOGROUP) is recreated.
///
/// `run()` is meant to be called once per instance.
public final class StreamConsumer: Sendable {
    public typealias Handler = @Sendable (StreamEntry) async throws -> Void
    /// Processes a whole batch; returns the entries that failed with their errors (the rest are acked).
    public typealias BatchHandler = @Sendable ([StreamEntry]) async -> [StreamEntryID: any Error]
    /// Processes a whole batch; returns the entries that failed and the commands that answer the
    /// batch's work (`BatchOutcome`), sent in the round trip of its `XACK`.
    public typealias AnsweringBatchHandler = @Sendable ([StreamEntry]) async -> BatchOutcome

    /// What an `AnsweringBatchHandler` did with its batch.
    public struct BatchOutcome {
        /// The entries that failed, with their errors (the rest are acked).
        public var failures: [StreamEntryID: any Error]
        /// Sent in one round trip with the batch's acknowledgement, ahead of it, so a batch whose
        /// work ends in messages to others (the liveactivity service's answers) costs one round
        /// trip for both. An error reply to one of them is logged; the entries are acked all the
        /// same (an I/O failure leaves them pending, to be retried).
        public var commands: [[RedisArgument]]

        public init(failures: [StreamEntryID: any Error], commands: [[RedisArgument]]) {
            self.failures = failures
            self.commands = commands
        }
    }

    enum Work: Sendable {
        case single(Handler)
        case batch(BatchHandler)
        case answering(AnsweringBatchHandler)
    }

    public let configuration: Configuration
    let client: RedisClient
    let reader: RedisConnection
    let logger: Logger
    let work: Work
    let state = Mutex(State())
    /// Fulfilled by `stop()`: wakes the reader's unblocking and a retry's wait.
    let stopped = OneShot<Void>()

    struct State {
        var stopping = false
        /// Entries read by this consumer and not yet settled (acked, left pending after a failure,
        /// or dead-lettered): `renewClaims` keeps them claimed.
        var held = Set<StreamEntryID>()
        var statistics = Statistics()
    }

    /// - Parameters:
    ///   - client: used for acks, claims and dead-lettering; reads use a dedicated connection.
    public convenience init(
        client: RedisClient, configuration: Configuration, logger: Logger, handler: @escaping Handler
    ) {
        self.init(client: client, configuration: configuration, logger: logger, work: .single(handler))
    }

    public convenience init(
        client: RedisClient, configuration: Configuration, logger: Logger, batchHandler: @escaping BatchHandler
    ) {
        self.init(client: client, configuration: configuration, logger: logger, work: .batch(batchHandler))
    }

    public convenience init(
        client: RedisClient, configuration: Configuration, logger: Logger,
        answeringBatchHandler: @escaping AnsweringBatchHandler
    ) {
        self.init(client: client, configuration: configuration, logger: logger, work: .answering(answeringBatchHandler))
    }

    private init(client: RedisClient, configuration: Configuration, logger: Logger, work: Work) {
        self.client = client
        self.configuration = configuration
        self.logger = logger.with([
            "stream": configuration.stream, "stream.group": configuration.group,
            "stream.consumer": configuration.consumer
        ])
        self.work = work
        self.reader = client.makeDedicatedConnection(name: "redis-reader")
    }

    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Asks `run()` to finish: no new reads; handlers in flight complete and are acked.
    public func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return !s.stopping
        }
        if first { stopped.fulfill(()) }
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Consumes until `stop()` or task cancellation. Never throws for Redis errors (it retries them).
    public func run() async {
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.unblockReaderOnStop() }
                group.addTask { await self.renewClaims() }
                if self.configuration.continuous, case .single(let handler) = self.work {
                    await self.windowLoop(handler)
                } else {
                    await self.loop()
                }
                self.stop()
                group.cancelAll()
            }
        } onCancel: {
            self.stop()
        }
        logger.info("stream consumer stopped")
    }

    /// Wakes a reader blocked in XREADGROUP so `stop()` does not wait for the block time.
    private func unblockReaderOnStop() async {
        _ = try? await stopped.wait()
        guard let id = reader.serverClientID else { return }
        _ = try? await client.send("CLIENT", "UNBLOCK", id)
    }

    private func loop() async {
        let clock = ContinuousClock()
        var backoff = configuration.retryBackoff
        var groupReady = false
        var nextReclaim = clock.now
        // Entries delivered to this consumer (read) whose handlers have not run yet.
        var carried: [StreamEntry] = []
        logger.info("stream consumer started")
        while true {
            do throws(RedisError) {
                if !groupReady {
                    if try await client.createGroup(
                        configuration.stream, group: configuration.group,
                        startID: configuration.groupStartID)
                    {
                        logger.info("stream consumer group created")
                    }
                    groupReady = true
                }
                if carried.isEmpty {
                    if isStopping { break }
                    if clock.now >= nextReclaim {
                        try await reclaimPending()
                        nextReclaim = clock.now + configuration.reclaimInterval
                    }
                    if isStopping { break }
                    carried = try await read(until: nextReclaim, clock: clock)
                    backoff = configuration.retryBackoff
                    if carried.isEmpty { continue }
                }
                let entries = carried
                carried = []
                if isStopping || clock.now >= nextReclaim || !configuration.readAhead {
                    // No read-ahead: stopping, a reclaim due before the next read, or turned off.
                    try await process(entries, deliveries: [:])
                } else {
                    // Read the next batch while this one's handlers run and its acks are sent:
                    // the reader connection's round trip and reply parsing overlap the handlers.
                    // Acks still only cover this batch's completed handlers, and go out as soon
                    // as they completed (on a pooled connection), never waiting for the read.
                    async let readAhead = readResult(until: nextReclaim, clock: clock)
                    let processed = await processResult(entries)
                    let next = await readAhead
                    if case .success(let more) = next { carried = more }
                    try processed.get()
                    _ = try next.get()
                }
                backoff = configuration.retryBackoff
            } catch {
                if error.serverErrorPrefix == "NOGROUP" { groupReady = false }
                await recordRedisError(error, backoff: backoff)
                if isStopping { break }  // entries carried stay pending and are reclaimed later
                backoff = min(backoff * 2, configuration.maxRetryBackoff)
            }
        }
    }

    /// One `XREADGROUP ... BLOCK` of at most `count` entries (default `batchSize`) on the reader
    /// connection, blocking at most until the next reclaim.
    private func read(
        until nextReclaim: ContinuousClock.Instant, clock: ContinuousClock, count: Int? = nil
    ) async throws(RedisError) -> [StreamEntry] {
        let block = max(.milliseconds(1), min(configuration.blockTime, nextReclaim - clock.now))
        let entries = try await reader.readGroup(
            configuration.stream, group: configuration.group,
            consumer: configuration.consumer, count: count ?? configuration.batchSize, block: block)
        if !entries.isEmpty { state.withLock { $0.held.formUnion(entries.map(\.id)) } }
        return entries
    }

    func readResult(
        until nextReclaim: ContinuousClock.Instant, clock: ContinuousClock, count: Int? = nil
    ) async -> Result<[StreamEntry], RedisError> {
        do throws(RedisError) {
            return .success(try await read(until: nextReclaim, clock: clock, count: count))
        } catch {
            return .failure(error)
        }
    }

    private func processResult(_ entries: [StreamEntry]) async -> Result<Void, RedisError> {
        do throws(RedisError) {
            return .success(try await process(entries, deliveries: [:]))
        } catch {
            return .failure(error)
        }
    }
}

extension StreamConsumer {
    /// Counts a Redis error of a consumer loop and, unless stopping, logs it and waits `backoff`
    /// (a stop ends the wait at once).
    func recordRedisError(_ error: RedisError, backoff: Duration) async {
        state.withLock { $0.statistics.redisErrors += 1 }
        guard !isStopping else { return }
        logger.warning(
            "stream consumer redis error, retrying",
            metadata: [
                "error.code": error.code.rawValue, "error": error.message,
                "retry.in_ms": String(RedisConfiguration.milliseconds(backoff))
            ])
        _ = await stopped.wait(atMost: backoff)
    }
}
