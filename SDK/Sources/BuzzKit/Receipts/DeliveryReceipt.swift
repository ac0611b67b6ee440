import BuzzKitWire
import Foundation
import Synchronization

/// The `$notification.delivered` receipt as the notification service extension sends it.
///
/// The extension has a few seconds of runtime. The receipt is first written to the queue
/// database in `storageDirectory` (with an app group: the shared container, the very queue the
/// app flushes), then sent on its own with a deadline. Sent: it leaves the queue. Not answered
/// in time, or a network failure: it stays queued and the app delivers it on its next launch
/// (its flush 5 s after `configure`). Without an app group the extension's own container is used
/// and receipts are best effort (a later extension run retries them).
public enum DeliveryReceipt {
    public enum Outcome: Sendable, Hashable {
        /// The API acknowledged the receipt.
        case sent
        /// Not sent in time; left in the queue for the app (or a later extension run).
        case savedForApp
        /// The API rejected it, or there was nothing to send it with (no API key, no storage).
        case dropped
    }

    /// Writes and sends the receipt for `messageId`.
    ///
    /// The API key and base URL are the ones the app stored in the shared queue when it
    /// configured BuzzKit, else `configuration`'s. The identity is the app's current one (the
    /// subscriber once its identify reached the server, else the anonymous id), else a new
    /// anonymous id stored for the app to adopt.
    /// With a client key the receipt goes out as the app's installation (its token is in the
    /// shared store; when the app has none yet, the extension registers it and stores it there).
    /// `deadline` seconds (default 5) bound the network part.
    public static func deliver(
        messageId: String, storageDirectory: URL, configuration: BuzzKitConfiguration?,
        transport: any Transport, clock: any BuzzKitClock = SystemClock(),
        deadline: TimeInterval = 5
    ) async -> Outcome {
        let logger = SDKLogger(handler: configuration?.logHandler ?? SDKLogger.defaultHandler())
        let store: EventStore
        let event: TrackedEvent
        let api: APIClient
        do {
            store = try EventStore(directory: storageDirectory)
            let storedKey = try store.valueNow(StateKey.apiKey)
            let storedURL = try store.valueNow(StateKey.baseURL).flatMap(URL.init(string:))
            guard let key = storedKey ?? configuration?.apiKey, let baseURL = storedURL ?? configuration?.baseURL else {
                logger.error("delivered receipt dropped: no API key (configure BuzzKit in the app first)")
                return .dropped
            }
            api = APIClient(transport: transport, baseURL: baseURL, apiKey: key, store: store, logger: logger)
            let identity: EventIdentity
            // With a client key, the subscriber's events are accepted only from an installation
            // the server knows is identified as it; until the app's identify went through, the
            // receipt goes under the anonymous id (which the server links to the subscriber).
            let subscriber = try store.valueNow(StateKey.subscriberId)
            var identified = subscriber != nil
            if let subscriber, InstallationRegistry.needed(for: key) {
                identified = try store.installationIdentifiedNow(as: subscriber)
            }
            if let subscriber, identified {
                identity = .subscriber(subscriber)
            } else if let anonymous = try store.valueNow(StateKey.anonymousId) {
                identity = .anonymous(anonymous)
            } else {
                let fresh = BuzzKit.newIdentifier()
                try store.setValueNow(fresh, for: StateKey.anonymousId)
                identity = .anonymous(fresh)
            }
            event = TrackedEvent(
                id: BuzzKit.newIdentifier(), name: ReservedEvent.notificationDelivered,
                data: ["messageId": .string(messageId)], timestamp: clock.now())
            try store.insertNow(event, identity: identity)
        } catch {
            logger.error("delivered receipt dropped: cannot write it", ["error": String(describing: error)])
            return .dropped
        }
        let anonymousId = (try? store.valueNow(StateKey.anonymousId)) ?? event.id
        let first = FirstOutcome()
        return await withCheckedContinuation { continuation in
            first.set(continuation)
            Task {
                let outcome = await send(event, store: store, api: api, anonymousId: anonymousId, logger: logger)
                first.resolve(outcome)
            }
            Task {
                await clock.sleep(seconds: deadline)
                first.resolve(.savedForApp)
            }
        }
    }

    private static func send(
        _ event: TrackedEvent, store: EventStore, api: APIClient, anonymousId: String,
        logger: SDKLogger
    ) async -> Outcome {
        do {
            guard let batch = try await store.nextBatch(limit: 1, only: [event.id]) else { return .sent }
            switch await api.sendEvents(batch, currentAnonymousId: anonymousId) {
            case .accepted:
                try await store.delete(ids: [event.id])
                return .sent
            case .rejected(let status, let error):
                try await store.delete(ids: [event.id])
                logger.error(
                    "delivered receipt rejected by the API",
                    ["status": String(status), "error.code": error?.code.rawValue ?? ""])
                return .dropped
            case .retryLater(let reason):
                _ = try await store.recordFailedAttempt(ids: [event.id], maxAttempts: 20)
                logger.warning("delivered receipt not sent; left for the app", ["reason": reason])
                return .savedForApp
            }
        } catch {
            return .savedForApp
        }
    }
}

/// Resumes a continuation with the first outcome offered; later ones are ignored.
private final class FirstOutcome: Sendable {
    private let state = Mutex<
        (
            continuation: CheckedContinuation<DeliveryReceipt.Outcome, Never>?, early: DeliveryReceipt.Outcome?,
            done: Bool
        )
    >((nil, nil, false))

    func set(_ continuation: CheckedContinuation<DeliveryReceipt.Outcome, Never>) {
        let early: DeliveryReceipt.Outcome? = state.withLock { s in
            if let early = s.early, !s.done {
                s.done = true
                return early
            }
            s.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func resolve(_ outcome: DeliveryReceipt.Outcome) {
        let continuation: CheckedContinuation<DeliveryReceipt.Outcome, Never>? = state.withLock { s in
            guard !s.done else { return nil }
            guard let c = s.continuation else {
                if s.early == nil { s.early = outcome }
                return nil
            }
            s.done = true
            s.continuation = nil
            return c
        }
        continuation?.resume(returning: outcome)
    }
}
