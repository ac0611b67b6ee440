import BuzzKitWire
import Foundation

extension BuzzKit {
    /// The identified subscriber's notification preferences: read them, change them (queued and
    /// retried offline like events). See `Preferences`.
    public var preferences: Preferences { Preferences(client: self) }

    /// The flush step for queued preference changes, oldest first; it runs after a pending
    /// identify (the installation must be identified as the subscriber first).
    ///
    /// Per change: 2xx removes it (and keeps the answer as the last known preferences); a 4xx other
    /// than 408/429 drops it, reported (log, delegate, and the `update` call waiting for it); no
    /// answer or a 5xx/408/429 counts an attempt, gives it up at `maxAttempts` (reported), and ends
    /// the step with `.networkFailure` so the flush backs off. If the process dies anywhere here,
    /// the change is still queued and is sent again on the next launch (a PUT names values, so
    /// sending it twice changes nothing the second time).
    func sendPendingPreferences() async -> FlushPassResult {
        while true {
            let next: PendingPreferenceChange?
            do { next = try await store.nextPreferenceChange() } catch {
                logger.error("cannot read the preference queue", ["error": String(describing: error)])
                return .finished
            }
            guard let pending = next else { return .finished }
            let sender = await api.sender(for: .subscriber(pending.subscriberId), current: anonymousId)
            let outcome = await api.changePreferences(
                subscriber: pending.subscriberId, signature: pending.signature, pending.change, as: sender)
            do {
                switch outcome {
                case .accepted(let data):
                    if try await store.completePreferenceChange(seq: pending.seq, revision: pending.revision) {
                        if let data { await remember(data) }
                        logger.debug("preference change sent")
                    }
                case .rejected(let status, let error):
                    try await store.dropPreferenceChange(seq: pending.seq)
                    await reportDropped(pending, .refused(status: status, error))
                case .retryLater(let reason):
                    let attempts = try await store.recordFailedPreferenceAttempt(seq: pending.seq)
                    logger.warning(
                        "preference change not sent; kept for a retry",
                        ["reason": reason, "attempts": String(attempts)])
                    if attempts >= configuration.maxAttempts {
                        try await store.dropPreferenceChange(seq: pending.seq)
                        await reportDropped(
                            pending,
                            PreferencesError(
                                code: .gaveUp, message: "no answer after \(attempts) attempts (last: \(reason))"))
                    }
                    return .networkFailure
                }
            } catch {
                logger.error("cannot update the preference queue", ["error": String(describing: error)])
                return .finished
            }
        }
    }

    /// Keeps a server answer as the last known preferences (for `Preferences.cached()`).
    func remember(_ data: JSONValue) async {
        do { try await store.setValue(data.jsonString, for: StateKey.preferences) } catch {
            logger.error("cannot keep the preferences", ["error": String(describing: error)])
        }
    }

    private func reportDropped(_ pending: PendingPreferenceChange, _ error: PreferencesError) async {
        logger.error(
            "preference change dropped",
            [
                "error.code": error.code.rawValue, "status": error.status.map(String.init) ?? "",
                "api.code": error.apiCode ?? "", "error.message": error.message
            ])
        state.withLock { s in
            s.droppedPreferenceChanges[pending.seq] = error
            // Only `update` calls waiting for their change read these; keep the newest few.
            while s.droppedPreferenceChanges.count > 32, let oldest = s.droppedPreferenceChanges.keys.min() {
                s.droppedPreferenceChanges[oldest] = nil
            }
        }
        if let delegate {
            await MainActor.run { delegate.buzzKit(self, didDropPreferenceChange: pending.change, error: error) }
        }
    }
}
