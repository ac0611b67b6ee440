import BuzzKitCore
import Synchronization

// MARK: - Handling a batch: run handlers, ack successes, record failures, dead-letter the hopeless

extension StreamConsumer {
    /// Moves one entry to the dead-letter stream and acks it, atomically.
    /// KEYS: stream, dead-letter stream, errors hash. ARGV: group, id, error ("" = the recorded one),
    /// then field/value pairs for the dead-letter entry (`dead.error` is appended).
    static let deadLetterScript = """
        local err = ARGV[3]
        if err == '' then err = redis.call('HGET', KEYS[3], ARGV[2]) or '' end
        local args = {KEYS[2], '*'}
        for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
        args[#args + 1] = 'dead.error'
        args[#args + 1] = err
        redis.call('XADD', unpack(args))
        redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
        redis.call('HDEL', KEYS[3], ARGV[2])
        return 1
        """

    static let maxErrorLength = 2000

    /// Runs the handlers for `entries`, then sends an answering handler's commands and
    /// acks/records/dead-letters, in one pipeline.
    /// `deliveries` holds known delivery counts (reclaimed entries); fresh entries count 1.
    func process(_ entries: [StreamEntry], deliveries: [StreamEntryID: Int]) async throws(RedisError) {
        let ids = entries.map(\.id)
        state.withLock { $0.held.formUnion(ids) }
        defer { state.withLock { $0.held.subtract(ids) } }
        let (failures, answers) = await runHandlers(entries)
        try await settle(entries, failures: failures, answers: answers, deliveries: deliveries)
    }

    /// After the handlers of `entries` ran: sends `answers`, then acks the entries that did not
    /// fail, records the failures and dead-letters the hopeless ones, in one pipeline.
    func settle(
        _ entries: [StreamEntry], failures: [StreamEntryID: String], answers: [[RedisArgument]],
        deliveries: [StreamEntryID: Int]
    ) async throws(RedisError) {
        var acked: [StreamEntryID] = []
        var failed: [(StreamEntryID, String)] = []
        var dead: [(StreamEntry, Int, String)] = []
        for entry in entries {
            if let error = failures[entry.id] {
                let count = deliveries[entry.id] ?? 1
                if count >= configuration.maxDeliveries {
                    dead.append((entry, count, error))
                } else {
                    failed.append((entry.id, error))
                }
            } else {
                acked.append(entry.id)
            }
        }
        var wire = RedisWire(capacity: 128 + acked.count * 32)
        for command in answers {
            wire.beginCommand(arguments: command.count)
            for argument in command { wire.append(argument.bytes) }
        }
        if !acked.isEmpty {
            RedisClient.appendAck(&wire, configuration.stream, group: configuration.group, ids: acked)
            let retried = acked.filter { (deliveries[$0] ?? 1) > 1 }
            if !retried.isEmpty {
                wire.beginCommand(arguments: 2 + retried.count)
                wire.append("HDEL")
                wire.append(configuration.errorsKey)
                for id in retried { wire.append(id) }
            }
        }
        if !failed.isEmpty {
            wire.beginCommand(arguments: 2 + failed.count * 2)
            wire.append("HSET")
            wire.append(configuration.errorsKey)
            for (id, error) in failed {
                wire.append(id)
                wire.append(error)
            }
            for (id, error) in failed {
                logger.warning(
                    "stream handler failed, entry left pending",
                    metadata: [
                        "entry.id": id.description, "error": error,
                        "entry.deliveries": String(deliveries[id] ?? 1)
                    ])
            }
        }
        for (entry, count, error) in dead {
            let command = deadLetterCommand(entry, deliveries: count, error: error)
            wire.beginCommand(arguments: command.count)
            for argument in command { wire.append(argument.bytes) }
        }
        let errors = try await client.execute(wire) { reply in RedisReplyParser.serverError(reply)?.message }
        for case let message? in errors {
            logger.error("stream consumer bookkeeping command failed", metadata: ["error": message])
        }
        for (entry, count, error) in dead {
            logger.error(
                "stream entry dead-lettered",
                metadata: [
                    "entry.id": entry.id.description, "entry.deliveries": String(count), "error": error,
                    "stream.dead": configuration.deadLetterStream
                ])
        }
        state.withLock {
            $0.statistics.processed += acked.count
            $0.statistics.failed += failed.count
            $0.statistics.deadLettered += dead.count
        }
    }

    /// Takes over entries idle longer than `claimIdleTime` (any consumer), dead-letters those
    /// already delivered more than `maxDeliveries` times, and processes the rest.
    func reclaimPending() async throws(RedisError) {
        var cursor = StreamEntryID.zero
        repeat {
            let claim = try await client.autoClaim(
                configuration.stream, group: configuration.group,
                consumer: configuration.consumer, minIdle: configuration.claimIdleTime,
                start: cursor, count: configuration.batchSize)
            if !claim.deletedIDs.isEmpty {
                logger.warning(
                    "stream entries vanished while pending", metadata: ["entries": String(claim.deletedIDs.count)])
                _ = try await client.hdel(configuration.errorsKey, fields: claim.deletedIDs.map(\.description))
            }
            if !claim.entries.isEmpty {
                state.withLock { $0.statistics.reclaimed += claim.entries.count }
                logger.info("stream entries reclaimed", metadata: ["entries": String(claim.entries.count)])
                let counts = try await deliveryCounts(claim.entries.map(\.id))
                let overdue = claim.entries.filter { (counts[$0.id] ?? 1) > configuration.maxDeliveries }
                if !overdue.isEmpty {
                    let replies = try await client.pipeline(
                        overdue.map {
                            deadLetterCommand($0, deliveries: counts[$0.id] ?? 0, error: "")
                        })
                    for reply in replies where reply.errorMessage != nil {
                        logger.error("stream dead-letter failed", metadata: ["error": reply.errorMessage ?? ""])
                    }
                    state.withLock { $0.statistics.deadLettered += overdue.count }
                }
                let rest = claim.entries.filter { (counts[$0.id] ?? 1) <= configuration.maxDeliveries }
                if !rest.isEmpty { try await process(rest, deliveries: counts) }
            }
            cursor = claim.nextStart
        } while cursor != .zero && !isStopping
    }

    /// Delivery counts of our pending entries, one pipelined XPENDING per id.
    private func deliveryCounts(_ ids: [StreamEntryID]) async throws(RedisError) -> [StreamEntryID: Int] {
        let commands = ids.map {
            RedisClient.pendingArguments(
                configuration.stream, group: configuration.group, idle: nil,
                start: $0.description, end: $0.description, count: 1, consumer: nil)
        }
        var counts: [StreamEntryID: Int] = [:]
        for reply in try await client.pipeline(commands) {
            for row in try RedisClient.parsePending(try reply.throwingServerError()) { counts[row.id] = row.deliveries }
        }
        return counts
    }

    private func deadLetterCommand(_ entry: StreamEntry, deliveries: Int, error: String) -> [RedisArgument] {
        var args: [RedisArgument] = [
            "EVAL", RedisArgument(Self.deadLetterScript), 3,
            RedisArgument(configuration.stream), RedisArgument(configuration.deadLetterStream),
            RedisArgument(configuration.errorsKey),
            RedisArgument(configuration.group), entry.id.redisArgument, RedisArgument(error)
        ]
        for field in entry.fields { args += [RedisArgument(field.name), RedisArgument(bytes: field.value)] }
        args += [
            "dead.stream", RedisArgument(configuration.stream), "dead.group", RedisArgument(configuration.group),
            "dead.id", entry.id.redisArgument, "dead.consumer", RedisArgument(configuration.consumer),
            "dead.deliveries", RedisArgument(deliveries)
        ]
        return args
    }

    /// Every third of `claimIdleTime`, tells Redis this consumer still holds the entries it has
    /// read and not yet settled (`keepClaimed`: their idle time restarts, no delivery is counted),
    /// so handlers slower than `claimIdleTime`, and the batch read ahead behind them, keep their
    /// entries: siblings take over only the entries of a consumer that stopped or hung.
    /// Runs until cancelled (`run()` cancels it when the consumer loop ended); a failure is logged
    /// by the loop and counted in `statistics.redisErrors`.
    func renewClaims() async {
        let loop = BackgroundLoop(
            name: "stream.claims", interval: configuration.claimIdleTime / 3, start: .afterInterval,
            logger: logger, metrics: nil)
        await loop.run {
            let held = state.withLock { Array($0.held) }
            guard !held.isEmpty else { return }
            do throws(RedisError) {
                try await client.keepClaimed(
                    configuration.stream, group: configuration.group,
                    consumer: configuration.consumer, ids: held)
            } catch {
                state.withLock { $0.statistics.redisErrors += 1 }
                throw error
            }
        }
    }

    /// Runs the handler(s); returns the failed entries with their error text, and the commands
    /// to send ahead of the acknowledgement (an answering handler's).
    private func runHandlers(_ entries: [StreamEntry]) async -> ([StreamEntryID: String], [[RedisArgument]]) {
        switch work {
        case .batch(let handler):
            return (await handler(entries).mapValues(Self.describe), [])
        case .answering(let handler):
            let outcome = await handler(entries)
            return (outcome.failures.mapValues(Self.describe), outcome.commands)
        case .single(let handler):
            // At most `limit` worker tasks per batch, each pulling the next entry from a shared
            // counter: bounded concurrency without one task per entry, and a slow entry only
            // holds its own worker.
            let workers = min(max(1, configuration.maxConcurrentHandlers), entries.count)
            let next = BatchCursor()
            @Sendable func work() async -> [StreamEntryID: String] {
                var failures: [StreamEntryID: String] = [:]
                while true {
                    let index = next.take()
                    guard index < entries.count else { break }
                    let entry = entries[index]
                    do {
                        try await handler(entry)
                    } catch {
                        failures[entry.id] = Self.describe(error)
                    }
                }
                return failures
            }
            if workers == 1 { return (await work(), []) }
            let failures = await withTaskGroup(of: [StreamEntryID: String].self) { group in
                // The current task is one of the workers: with handlers that never suspend it
                // often finishes the batch before the others even start.
                for _ in 1..<workers { group.addTask { await work() } }
                var failures = await work()
                for await partial in group { failures.merge(partial) { first, _ in first } }
                return failures
            }
            return (failures, [])
        }
    }

    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        return text.count > maxErrorLength ? String(text.prefix(maxErrorLength)) : text
    }
}

/// The next entry index for the handler workers of one batch.
private final class BatchCursor: Sendable {
    private let index = Atomic<Int>(0)
    func take() -> Int { index.wrappingAdd(1, ordering: .relaxed).oldValue }
}
