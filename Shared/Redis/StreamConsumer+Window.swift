import BuzzKitCore

// MARK: - Continuous handling: a window of handlers instead of batches

extension StreamConsumer {
    /// What the window loop waits on: a read, a handler or an acknowledgement ended, or a
    /// backoff after a Redis error is over.
    enum WindowEvent: Sendable {
        case read(Result<[StreamEntry], RedisError>)
        case handled(StreamEntry, failure: String?)
        case settled([StreamEntryID], Result<Void, RedisError>)
        case backedOff
    }

    /// The loop of a `continuous` consumer (`Configuration.continuous`, one handler per entry):
    /// up to `maxConcurrentHandlers` handlers run at once, and each slot takes the next entry as
    /// soon as its handler ends, instead of waiting for the slowest handler of its batch. The
    /// entries that ended since the last acknowledgement are settled together (acked, or left
    /// pending with their error, or dead-lettered: `settle`), one round trip at a time. Once every
    /// entry read has a handler, it reads what fills the free slots and keeps ONE entry ready
    /// behind them (at most `batchSize` at a time): at most `maxConcurrentHandlers + 1` entries
    /// are delivered to this consumer and not yet settled, so when a stream runs dry its last
    /// entries are spread over the consumers with free slots instead of waiting behind a
    /// sibling's busy ones (a read per entry costs a round trip on the reader's own connection,
    /// small beside handlers like the sender's chunks). After `stop()` nothing more is read; the
    /// entries read already are handled and settled before `run()` returns. Reclaiming
    /// (`reclaimPending`) is as in the batch loop.
    func windowLoop(_ handler: @escaping Handler) async {
        let clock = ContinuousClock()
        let limit = max(1, configuration.maxConcurrentHandlers)
        var backoff = configuration.retryBackoff
        var groupReady = false
        var nextReclaim = clock.now
        // Entries read and not yet started, from `head` on.
        var waiting: [StreamEntry] = []
        var head = 0
        var running = 0
        // A read, or the wait after a failed one, is in flight (one at a time).
        var reading = false
        // Handlers ended and not yet settled; one settlement in flight at a time.
        var ended: [(entry: StreamEntry, failure: String?)] = []
        var settling = false
        logger.info("stream consumer started (continuous)")
        await withTaskGroup(of: WindowEvent.self) { group in
            while true {
                while running < limit, head < waiting.count {
                    let entry = waiting[head]
                    head += 1
                    running += 1
                    group.addTask {
                        do {
                            try await handler(entry)
                            return .handled(entry, failure: nil)
                        } catch {
                            return .handled(entry, failure: Self.describe(error))
                        }
                    }
                }
                if head == waiting.count {
                    waiting.removeAll(keepingCapacity: true)
                    head = 0
                }
                if !settling, !ended.isEmpty {
                    let batch = ended
                    ended.removeAll(keepingCapacity: true)
                    settling = true
                    group.addTask {
                        let entries = batch.map(\.entry)
                        var failures: [StreamEntryID: String] = [:]
                        for (entry, failure) in batch { if let failure { failures[entry.id] = failure } }
                        do throws(RedisError) {
                            try await self.settle(entries, failures: failures, answers: [], deliveries: [:])
                            return .settled(entries.map(\.id), .success(()))
                        } catch {
                            return .settled(entries.map(\.id), .failure(error))
                        }
                    }
                }
                if !reading, waiting.isEmpty, !isStopping {
                    do throws(RedisError) {
                        if !groupReady {
                            if try await client.createGroup(
                                configuration.stream, group: configuration.group, startID: configuration.groupStartID)
                            {
                                logger.info("stream consumer group created")
                            }
                            groupReady = true
                        }
                        if clock.now >= nextReclaim {
                            try await reclaimPending()
                            nextReclaim = clock.now + configuration.reclaimInterval
                        }
                        reading = true
                        let until = nextReclaim
                        let count = max(1, min(configuration.batchSize, limit - running + 1))
                        group.addTask { .read(await self.readResult(until: until, clock: clock, count: count)) }
                    } catch {
                        reading = true
                        group.addTask { [backoff] in await self.afterRedisError(error, backoff: backoff) }
                        if error.serverErrorPrefix == "NOGROUP" { groupReady = false }
                        backoff = min(backoff * 2, configuration.maxRetryBackoff)
                    }
                }
                // Nothing in flight: stopping, with every entry read handled and settled.
                guard let event = await group.next() else { break }
                switch event {
                case .read(.success(let entries)):
                    reading = false
                    backoff = configuration.retryBackoff
                    waiting.append(contentsOf: entries)
                case .read(.failure(let error)):
                    if error.serverErrorPrefix == "NOGROUP" { groupReady = false }
                    group.addTask { [backoff] in await self.afterRedisError(error, backoff: backoff) }
                    backoff = min(backoff * 2, configuration.maxRetryBackoff)
                case .backedOff:
                    reading = false
                case .handled(let entry, let failure):
                    running -= 1
                    ended.append((entry, failure))
                case .settled(let ids, let result):
                    settling = false
                    state.withLock { $0.held.subtract(ids) }
                    if case .failure(let error) = result {
                        // Left pending: reclaimed after `claimIdleTime` and handled again.
                        state.withLock { $0.statistics.redisErrors += 1 }
                        logger.warning(
                            "stream consumer could not settle entries, they stay pending",
                            metadata: ["error.code": error.code.rawValue, "error": error.message])
                    }
                }
            }
        }
    }

    /// A Redis error of the window loop, counted, logged and waited out (`recordRedisError`).
    private func afterRedisError(_ error: RedisError, backoff: Duration) async -> WindowEvent {
        await recordRedisError(error, backoff: backoff)
        return .backedOff
    }
}
