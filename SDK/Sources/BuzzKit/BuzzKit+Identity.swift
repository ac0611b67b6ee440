import BuzzKitWire
import Foundation

extension BuzzKit {
    /// Identifies this installation as `subscriberId` (your own user id). Events tracked from now
    /// on are sent under it; events already queued keep the identity they were tracked under.
    /// Under a new id it links the anonymous id to the subscriber (`POST /v1/identify`) and
    /// flushes at once; identifying again under the same id does nothing.
    public func identify(_ subscriberId: String) {
        guard !subscriberId.isEmpty, subscriberId.utf8.count <= EventBatch.maxIdentityBytes else {
            logger.error("identify ignored: invalid subscriber id", ["length": String(subscriberId.utf8.count)])
            return
        }
        let anonymous: String? = state.withLock { s in
            guard s.subscriberId != subscriberId else { return nil }
            s.subscriberId = subscriberId
            return s.anonymousId
        }
        guard let anonymous else { return }
        jobs.submit { [self] in
            do {
                try await store.setValues([
                    StateKey.subscriberId: subscriberId,
                    StateKey.pendingIdentify: anonymous + "\u{1F}" + subscriberId
                ])
                if try await store.value(StateKey.deviceToken) != nil {
                    try await store.setValue("1", for: StateKey.deviceRegistrationPending)
                }
                // Live Activity tokens are registered against the identified subscriber.
                try await store.markActivityTokensPending()
            } catch {
                logger.error("cannot store the identity", ["error": String(describing: error)])
            }
        }
        requestFlush()
    }

    /// Forgets the subscriber (a logout): a new anonymous id is used from now on, and with a
    /// client key a new installation is registered for it before its first request. Events
    /// already queued are still sent under the identity they were tracked under (with the
    /// installation token of that identity, kept in the store).
    public func reset() {
        let fresh = Self.newIdentifier()
        state.withLock { s in
            s.subscriberId = nil
            s.anonymousId = fresh
        }
        jobs.submit { [self] in
            do {
                // A pending identify stays: it links the old anonymous id, and its installation
                // must be identified for the old subscriber's queued events to be accepted.
                try await store.setValues([
                    StateKey.subscriberId: nil, StateKey.anonymousId: fresh,
                    StateKey.sessionStart: nil,
                    StateKey.backgroundAt: nil, StateKey.lastActiveAt: nil
                ])
            } catch {
                logger.error("cannot store the reset identity", ["error": String(describing: error)])
            }
        }
    }

    func sendPendingIdentify() async -> FlushPassResult {
        guard let pending = try? await store.value(StateKey.pendingIdentify) else { return .finished }
        let parts = pending.split(separator: "\u{1F}", maxSplits: 1).map(String.init)
        guard parts.count == 2 else {
            try? await store.setValue(nil, for: StateKey.pendingIdentify)
            return .finished
        }
        switch await api.identify(anonymousId: parts[0], subscriberId: parts[1]) {
        case .accepted:
            try? await store.setValue(nil, for: StateKey.pendingIdentify)
        case .rejected(let status, let error):
            logger.error(
                "identify rejected by the API", ["status": String(status), "error.code": error?.code.rawValue ?? ""])
            try? await store.setValue(nil, for: StateKey.pendingIdentify)
        case .retryLater(let reason):
            logger.warning("identify not sent; retried on the next flush", ["reason": reason])
            return .networkFailure
        }
        return .finished
    }
}
