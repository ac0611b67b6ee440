import BuzzKitWire
import Foundation

extension BuzzKit {
    /// Sends everything queued now, batch by batch, and returns when the queue is empty or a
    /// batch could not be sent (it stays queued for the next flush).
    public func flushEvents() async {
        await jobs.drain()
        await flushes.run { [self] in await flushPass() }
    }

    /// Flushes after `seconds` unless a flush is already due sooner (then that one covers it).
    func scheduleFlush(after seconds: TimeInterval) {
        let clock = platform.clock
        let deadline = clock.now().addingTimeInterval(seconds)
        state.withLock { s in
            if let timer = s.flushTimer, timer.deadline <= deadline { return }
            s.flushTimer?.work.cancel()
            let work = clock.schedule(after: seconds) { [weak self] in
                guard let self else { return }
                self.state.withLock { $0.flushTimer = nil }
                await self.flushEvents()
            }
            s.flushTimer = (deadline, work)
        }
    }

    /// Flushes as soon as every write submitted before it is on disk, without waiting for it.
    func requestFlush() {
        jobs.submit { [self] in flushes.submit { [self] in await flushPass() } }
    }

    /// One pass: a pending identify, a pending device registration, then the queue.
    ///
    /// Per batch: 2xx deletes it; an API error (4xx other than 408/429) drops it, logged; a
    /// network failure (or 5xx, 408, 429) counts an attempt on each of its events, gives up on
    /// those with `maxAttempts` attempts, and ends the pass.
    func flushPass() async {
        await sendPendingIdentify()
        await sendPendingDeviceRegistration()
        while true {
            let batch: EventBatch?
            do { batch = try await store.nextBatch(limit: min(configuration.batchSize, EventBatch.maxEvents)) } catch {
                logger.error("cannot read the event queue", ["error": String(describing: error)])
                return
            }
            guard let batch, !batch.events.isEmpty else { return }
            let ids = batch.events.map(\.id)
            let outcome = await api.sendEvents(batch)
            do {
                switch outcome {
                case .accepted:
                    try await store.delete(ids: ids)
                    logger.debug("event batch sent", ["count": String(ids.count)])
                case .rejected(let status, let error):
                    try await store.delete(ids: ids)
                    logger.error("event batch rejected by the API and dropped",
                                 ["count": String(ids.count), "status": String(status),
                                  "error.code": error?.code.rawValue ?? "", "error.message": error?.message ?? ""])
                case .retryLater(let reason):
                    let given = try await store.recordFailedAttempt(ids: ids, maxAttempts: configuration.maxAttempts)
                    logger.warning("event batch not sent; kept for a retry",
                                   ["count": String(ids.count), "reason": reason, "givenUp": String(given)])
                    if given > 0 {
                        logger.error("events given up after too many failed attempts",
                                     ["count": String(given), "maxAttempts": String(configuration.maxAttempts)])
                    }
                    return
                }
            } catch {
                logger.error("cannot update the event queue", ["error": String(describing: error)])
                return
            }
        }
    }
}
