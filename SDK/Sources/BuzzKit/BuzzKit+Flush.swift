import BuzzKitWire
import Foundation

extension BuzzKit {
    /// Sends everything queued now, batch by batch, and returns when the queue is empty or a
    /// batch could not be sent (it stays queued, and a retry is scheduled with backoff).
    public func flushEvents() async {
        await jobs.drain()
        await flushes.run { [self] in await flushPassWithBackoff() }
    }

    /// Flushes after `seconds` unless a flush is already due sooner (then that one covers it).
    /// While a failed flush is backing off, the flush waits for the backoff's retry instead
    /// (triggers that flush at once, like back online or `flushEvents()`, do not wait).
    func scheduleFlush(after seconds: TimeInterval) {
        let clock = platform.clock
        let now = clock.now()
        state.withLock { s in
            var deadline = now.addingTimeInterval(seconds)
            if let backoff = s.backoffUntil, backoff > deadline { deadline = backoff }
            if let timer = s.flushTimer, timer.deadline <= deadline { return }
            s.flushTimer?.work.cancel()
            s.flushTimer = (deadline, makeFlushTimer(clock, after: deadline.timeIntervalSince(now)))
        }
    }

    private func makeFlushTimer(_ clock: any BuzzKitClock, after seconds: TimeInterval) -> ScheduledWork {
        clock.schedule(after: seconds) { [weak self] in
            guard let self else { return }
            self.state.withLock { $0.flushTimer = nil }
            await self.flushEvents()
        }
    }

    /// Flushes as soon as every write submitted before it is on disk, without waiting for it.
    func requestFlush() {
        jobs.submit { [self] in flushes.submit { [self] in await flushPassWithBackoff() } }
    }

    /// The delay before retry number `failures` (1, 2, ...): `retryBaseDelay` doubled per
    /// consecutive failure, capped at `retryMaxDelay`, then jittered into its upper half
    /// ("equal jitter": `[d/2, d]`), so devices that failed together do not retry together.
    static func retryDelay(failures: Int, base: TimeInterval, cap: TimeInterval, unit: Double) -> TimeInterval {
        let exponent = Double(min(max(failures - 1, 0), 30))
        let full = min(cap, base * pow(2, exponent))
        return full / 2 + full / 2 * min(max(unit, 0), 1)
    }

    private func flushPassWithBackoff() async {
        let failed = await flushPass() == .networkFailure
        let clock = platform.clock
        let now = clock.now()
        state.withLock { s in
            guard failed else {
                s.consecutiveFailures = 0
                s.backoffUntil = nil
                return
            }
            s.consecutiveFailures += 1
            let delay = Self.retryDelay(
                failures: s.consecutiveFailures, base: configuration.retryBaseDelay,
                cap: configuration.retryMaxDelay, unit: Double.random(in: 0...1))
            let deadline = now.addingTimeInterval(delay)
            s.backoffUntil = deadline
            s.flushTimer?.work.cancel()
            s.flushTimer = (deadline, makeFlushTimer(clock, after: delay))
        }
        if failed {
            let (failures, until) = state.withLock { ($0.consecutiveFailures, $0.backoffUntil) }
            logger.info(
                "flush retry scheduled",
                [
                    "failures": String(failures),
                    "retry.in": String(format: "%.1f", until.map { $0.timeIntervalSince(now) } ?? 0)
                ])
        }
    }

    enum FlushPassResult: Sendable, Equatable {
        /// Everything that could be sent was (or rejected and dropped).
        case finished
        /// A request got no answer, or a "later" one (5xx, 408, 429): retry with backoff.
        case networkFailure
    }

    /// One pass: a pending identify, queued preference changes, a pending device registration,
    /// Live Activity tokens, then the queue.
    ///
    /// Per batch: 2xx deletes it; an API error (4xx other than 408/429) drops it, logged; a
    /// network failure (or 5xx, 408, 429) counts an attempt on each of its events, gives up on
    /// those with `maxAttempts` attempts, and ends the pass.
    func flushPass() async -> FlushPassResult {
        var result = FlushPassResult.finished
        // Without the identify, the subscriber's events would be refused: retry it all later.
        if await sendPendingIdentify() == .networkFailure { return .networkFailure }
        if await sendPendingPreferences() == .networkFailure { result = .networkFailure }
        if await sendPendingDeviceRegistration() == .networkFailure { result = .networkFailure }
        if await activities.sendPending() == .networkFailure { result = .networkFailure }
        while true {
            let batch: EventBatch?
            do { batch = try await store.nextBatch(limit: min(configuration.batchSize, EventBatch.maxEvents)) } catch {
                logger.error("cannot read the event queue", ["error": String(describing: error)])
                return result
            }
            guard let batch, !batch.events.isEmpty else { return result }
            let ids = batch.events.map(\.id)
            let outcome = await api.sendEvents(batch, currentAnonymousId: anonymousId)
            do {
                switch outcome {
                case .accepted:
                    try await store.delete(ids: ids)
                    logger.debug("event batch sent", ["count": String(ids.count)])
                case .rejected(let status, let error):
                    try await store.delete(ids: ids)
                    logger.error(
                        "event batch rejected by the API and dropped",
                        [
                            "count": String(ids.count), "status": String(status),
                            "error.code": error?.code.rawValue ?? "", "error.message": error?.message ?? ""
                        ])
                case .retryLater(let reason):
                    let given = try await store.recordFailedAttempt(ids: ids, maxAttempts: configuration.maxAttempts)
                    logger.warning(
                        "event batch not sent; kept for a retry",
                        ["count": String(ids.count), "reason": reason, "givenUp": String(given)])
                    if given > 0 {
                        logger.error(
                            "events given up after too many failed attempts",
                            ["count": String(given), "maxAttempts": String(configuration.maxAttempts)])
                    }
                    return .networkFailure
                }
            } catch {
                logger.error("cannot update the event queue", ["error": String(describing: error)])
                return result
            }
        }
    }
}
