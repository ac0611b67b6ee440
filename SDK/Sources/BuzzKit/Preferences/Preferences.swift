import BuzzKitWire
import Foundation

/// The identified subscriber's notification preferences (`BuzzKit.shared?.preferences`): which
/// categories of notification reach them, and the global unsubscribe.
///
/// ```swift
/// BuzzKit.identify(user.id, signature: session.buzzKitSignature)  // from your backend
/// let preferences = try await BuzzKit.shared?.preferences.fetch()
/// try await BuzzKit.shared?.preferences.set("offers", enabled: false)
/// ```
///
/// Every call acts for the subscriber of `identify(_:signature:)` and sends the signature your
/// backend made for them (`BuzzKit-Subscriber-Signature`: the lowercase hex HMAC-SHA256 of the
/// subscriber id keyed with the tenant's identity secret); without it the server refuses a client
/// key, so a call before `identify` fails with `notIdentified`, one after an `identify` without a
/// signature with `signatureRequired`.
///
/// Changes are queued like events: each is stored in the SDK's database before anything is
/// sent, sent by every flush (after a pending identify, before events), and kept across launches
/// until the server answers. No answer or a 5xx/408/429 keeps it for the flush's retry with
/// backoff (5 s doubling to 5 min, given up after `maxAttempts` failed attempts); a 403 or another
/// 4xx drops it at once, reported to the waiting call, the log and
/// `BuzzKitDelegate.buzzKit(_:didDropPreferenceChange:error:)`. Successive changes of one
/// subscriber still waiting are merged into one (the later value of a category wins), which the
/// server applies as it would have applied them one by one; changes stay in order.
public struct Preferences: Sendable {
    /// What became of a change by the time `update` returned.
    public enum WriteOutcome: Sendable, Hashable {
        /// The server has it.
        case applied
        /// It is stored on the device and will be sent when the server can be reached.
        case queued
    }

    let client: BuzzKit

    // MARK: - Reading

    /// The subscriber's preferences from the server, after queued changes were sent (those that
    /// could not be are applied to the answer: `hasPendingChanges`). The answer is kept for
    /// `cached()`. Throws `unavailable` when the server cannot be reached (`cached()` then has the
    /// last known value), `forbidden` for a signature the server does not accept.
    public func fetch() async throws(PreferencesError) -> NotificationPreferences {
        let (subscriber, signature) = try identified()
        await client.flushEvents()
        let sender = await client.api.sender(for: .subscriber(subscriber), current: client.anonymousId)
        switch await client.api.preferences(subscriber: subscriber, signature: signature, as: sender) {
        case .accepted(let data):
            guard let data, let answer = NotificationPreferences(json: data) else {
                throw PreferencesError(code: .unavailable, status: 200, message: "the answer holds no preferences")
            }
            await client.remember(data)
            return try await withPending(answer, subscriber: subscriber)
        case .rejected(let status, let error):
            throw .refused(status: status, error)
        case .retryLater(let reason):
            throw PreferencesError(code: .unavailable, message: reason)
        }
    }

    /// The last preferences the server answered on this device for the identified subscriber,
    /// with the changes still queued applied (`isCached`); nil when there is none (never fetched,
    /// or another subscriber's). Reads no network: for showing a settings screen offline.
    public func cached() async -> NotificationPreferences? {
        guard let subscriber = client.state.withLock({ $0.subscriberId }) else { return nil }
        await client.jobs.drain()
        guard let text = try? await client.store.value(StateKey.preferences),
            let json = try? JSONValue.parse(text), var value = NotificationPreferences(json: json),
            value.subscriberId == subscriber
        else { return nil }
        value.isCached = true
        return try? await withPending(value, subscriber: subscriber)
    }

    // MARK: - Changing

    /// Turns one category on or off for the subscriber (see `update(_:)`).
    @discardableResult
    public func set(_ category: String, enabled: Bool) async throws(PreferencesError) -> WriteOutcome {
        try await update(PreferenceChange(categories: [category: enabled]))
    }

    /// The global switch: `false` unsubscribes from every category but the critical ones, `true`
    /// subscribes again (each category then follows the subscriber's choice or its default).
    @discardableResult
    public func setAll(_ enabled: Bool) async throws(PreferencesError) -> WriteOutcome {
        try await update(PreferenceChange(all: enabled))
    }

    /// Queues `change` (what it names is replaced, the rest kept) and tries to send it at once.
    ///
    /// Returns `.applied` when the server has it, `.queued` when it could not be reached (the
    /// change is on disk and sent by later flushes, with backoff, across launches). Throws
    /// `notIdentified` / `signatureRequired` / `invalidChange` without storing anything, and
    /// `forbidden` / `rejected` when the server refused the change (it is dropped, not retried).
    @discardableResult
    public func update(_ change: PreferenceChange) async throws(PreferencesError) -> WriteOutcome {
        let (subscriber, signature) = try identified()
        if let problem = Self.problem(with: change) {
            throw PreferencesError(code: .invalidChange, message: problem)
        }
        let queued: Result<Int64, PreferencesError> = await client.jobs.run { [client] in
            do {
                return .success(
                    try await client.store.enqueuePreferenceChange(
                        change, subscriberId: subscriber, signature: signature))
            } catch {
                return .failure(PreferencesError(code: .storage, message: String(describing: error)))
            }
        }
        let seq = try queued.get()
        await client.flushEvents()
        if let dropped = client.state.withLock({ $0.droppedPreferenceChanges.removeValue(forKey: seq) }) {
            throw dropped
        }
        let stillQueued = (try? await client.store.preferenceChangeQueued(seq: seq)) ?? true
        return stillQueued ? .queued : .applied
    }

    /// Changes stored on this device and not yet applied by the server (merged changes count once).
    public func pendingChangeCount() async -> Int {
        await client.jobs.drain()
        return (try? await client.store.preferenceChangeCount()) ?? 0
    }

    // MARK: - Internals

    private func identified() throws(PreferencesError) -> (subscriber: String, signature: String) {
        let (subscriber, signature) = client.state.withLock { ($0.subscriberId, $0.subscriberSignature) }
        guard let subscriber else {
            throw PreferencesError(
                code: .notIdentified, message: "call identify(_:signature:) first: preferences are a subscriber's")
        }
        guard let signature else {
            throw PreferencesError(
                code: .signatureRequired,
                message: "identify(_:signature:) was called without the signature your backend made for this subscriber"
            )
        }
        return (subscriber, signature)
    }

    private func withPending(_ value: NotificationPreferences, subscriber: String) async throws(PreferencesError)
        -> NotificationPreferences
    {
        let pending: [PendingPreferenceChange]
        do { pending = try await client.store.pendingPreferenceChanges(subscriberId: subscriber) } catch {
            throw PreferencesError(code: .storage, message: String(describing: error))
        }
        var value = value
        for change in pending { value = value.applying(change.change) }
        value.hasPendingChanges = !pending.isEmpty
        return value
    }

    /// What the SDK refuses before storing a change (the server checks the rest: 422 for a
    /// category the tenant does not have).
    static func problem(with change: PreferenceChange) -> String? {
        if change.isEmpty { return "the change names nothing" }
        if change.categories.count > 200 { return "a change may name at most 200 categories" }
        for key in change.categories.keys {
            let allowed = key.unicodeScalars.allSatisfy {
                ($0.isASCII && (CharacterSet.alphanumerics.contains($0))) || "_-.:".unicodeScalars.contains($0)
            }
            if key.isEmpty || key.utf8.count > 128 || !allowed {
                return "\"\(key)\" is not a category key (letters, digits, _ - . :, 1 to 128 characters)"
            }
        }
        return nil
    }
}
