import BuzzKitWire
import Foundation

extension BuzzKit {
    /// Identifies this installation as `subscriberId` (your own user id). Events tracked from now
    /// on are sent under it; events already queued keep the identity they were tracked under.
    /// Under a new id it links the anonymous id to the subscriber (`POST /v1/identify`) and
    /// flushes at once; identifying again under the same id does nothing (unless it brings a new
    /// signature: that is kept and sent with a new identify).
    ///
    /// `signature` is what your backend computed for this subscriber: the lowercase hex
    /// HMAC-SHA256 of `subscriberId` keyed with the tenant's identity secret. The server checks it
    /// at identify (a wrong one: the identify is refused with 403 `forbidden_subscriber`, logged),
    /// and the SDK keeps it for the calls that act for the subscriber (`preferences`), which need
    /// it, across launches, until `reset()` or an identify as someone else. Default nil: events,
    /// devices and tokens work without it; `preferences` does not.
    public func identify(_ subscriberId: String, signature: String? = nil) {
        guard !subscriberId.isEmpty, subscriberId.utf8.count <= EventBatch.maxIdentityBytes else {
            logger.error("identify ignored: invalid subscriber id", ["length": String(subscriberId.utf8.count)])
            return
        }
        let signature = signature.flatMap { $0.isEmpty ? nil : $0.lowercased() }
        let anonymous: String? = state.withLock { s in
            // The same id again without a signature keeps the one given before (apps that
            // identify at every launch need not keep the signature themselves).
            let unchanged = s.subscriberId == subscriberId && (signature == nil || s.subscriberSignature == signature)
            guard !unchanged else { return nil }
            s.subscriberId = subscriberId
            s.subscriberSignature = signature
            return s.anonymousId
        }
        guard let anonymous else { return }
        jobs.submit { [self] in
            do {
                try await store.setValues([
                    StateKey.subscriberId: subscriberId,
                    StateKey.subscriberSignature: signature,
                    StateKey.pendingIdentify: [anonymous, subscriberId, signature ?? ""].joined(separator: "\u{1F}")
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
            s.subscriberSignature = nil
            s.anonymousId = fresh
        }
        jobs.submit { [self] in
            do {
                // A pending identify stays: it links the old anonymous id, and its installation
                // must be identified for the old subscriber's queued events to be accepted.
                try await store.setValues([
                    StateKey.subscriberId: nil, StateKey.subscriberSignature: nil, StateKey.anonymousId: fresh,
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
        // anonymous id, subscriber id and (since signatures) the signature, "" for none.
        let parts = pending.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 || parts.count == 3 else {
            try? await store.setValue(nil, for: StateKey.pendingIdentify)
            return .finished
        }
        let signature = parts.count == 3 && !parts[2].isEmpty ? parts[2] : nil
        switch await api.identify(anonymousId: parts[0], subscriberId: parts[1], signature: signature) {
        case .accepted:
            try? await store.setValue(nil, for: StateKey.pendingIdentify)
        case .rejected(403, let error) where signature != nil && error?.code == .forbiddenSubscriber:
            // The signature is not this subscriber's: only the calls that need it (preferences)
            // must fail, with the server's code, while events keep reaching the subscriber. So
            // the link is made again without it (the signature stays for those calls to report).
            logger.error("identify refused its signature; identifying without it", ["status": "403"])
            try? await store.setValue(
                [parts[0], parts[1], ""].joined(separator: "\u{1F}"), for: StateKey.pendingIdentify)
            return await sendPendingIdentify()
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
