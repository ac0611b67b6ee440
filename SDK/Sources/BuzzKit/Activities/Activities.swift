import BuzzKitWire
import Foundation
import Synchronization

/// Keeps Live Activity push tokens registered with BuzzKit and reports `$activity.*` events.
///
/// Server routes (the gateway serves them; see docs/api.md, Live Activities):
/// - `PUT /v1/subscribers/{id}/live-activities/{activityId}` `{attributesType, token, environment, bundleId}`
/// - `PUT /v1/subscribers/{id}/live-activity-start-tokens/{attributesType}` `{token, environment, bundleId}`
/// - `DELETE /v1/subscribers/{id}/live-activities/{activityId}` (the activity ended or was dismissed)
///
/// Tokens are hex; `{id}` is the identified subscriber (or the anonymous id before `identify`).
/// Registration is idempotent on the server, so re-registering a token changes nothing.
///
/// Every token (and every end) is first kept in the SDK's store, then sent. What did not reach
/// the server is sent again by later flushes (a network failure: with the flush's backoff), and
/// every kept token is registered again after `identify`. A server without these routes answers
/// 404 `not_found`: the call fails with `ActivityRegistrationError.Code.serverLacksLiveActivities`,
/// which is logged once per process, and no request is made for the rest of the process (the
/// tokens stay kept and are registered on a later launch).
public final class Activities: Sendable {
    private struct WeakClient: @unchecked Sendable {
        // @unchecked: only the weak reference itself, read and written under the Mutex.
        weak var client: BuzzKit?
    }

    private struct Tracking: Sendable {
        var started: Set<String> = []
        var finished: Set<String> = []
        var types: [String: String] = [:]
        /// The server answered 404 for a Live Activity route in this process.
        var serverLacksRoutes = false
    }

    private let owner = Mutex(WeakClient())
    private let tracking = Mutex(Tracking())

    init() {}

    func attach(_ client: BuzzKit) { owner.withLock { $0.client = client } }

    private func client() throws(ActivityRegistrationError) -> BuzzKit {
        guard let client = owner.withLock({ $0.client }) else {
            throw ActivityRegistrationError(code: .notConfigured, message: "BuzzKit is not configured")
        }
        return client
    }

    // MARK: - Low-level surface

    /// Registers (or re-registers after a rotation) an activity's push token. The token is kept
    /// either way; a failure says why it has not reached the server yet.
    public func register(id: String, token: Data, attributesType: String) async throws(ActivityRegistrationError) {
        let client = try client()
        tracking.withLock { $0.types[id] = attributesType }
        let record = ActivityTokenRecord(
            kind: .activity, key: id, attributesType: attributesType, token: Self.hex(token))
        await keep(client, record)
        try await deliver(client, record)
    }

    /// Registers the push-to-start token of an attributes type (iOS 17.2 and later). Kept either way.
    public func registerPushToStartToken(_ token: Data, attributesType: String) async throws(ActivityRegistrationError)
    {
        let client = try client()
        let record = ActivityTokenRecord(
            kind: .pushToStart, key: attributesType, attributesType: attributesType,
            token: Self.hex(token))
        await keep(client, record)
        try await deliver(client, record)
    }

    /// The activity ended (from the app): tracks `$activity.ended` and tells the server to stop
    /// updating it (kept and retried when that fails). Failures are logged, never thrown.
    public func end(id: String) async {
        await finish(id: id, state: .ended)
    }

    /// Tokens and ends kept but not yet on the server (diagnostics; tests).
    public func pendingTokenCount() async -> Int {
        guard let client = try? client() else { return 0 }
        return (try? await client.store.pendingActivityTokens().count) ?? 0
    }

    // MARK: - Observing

    /// Consumes `provider`'s updates until its stream ends: each activity seen is tracked once
    /// as `$activity.started`, each push token (and rotation) registered, the push-to-start token
    /// registered, and an ended, dismissed or stale activity reported (ended and dismissed ones
    /// are also cleared on the server).
    public func run(_ provider: some ActivityProvider) async {
        for await update in provider.updates() { await handle(update) }
    }

    /// `run(_:)` in a task of its own, for the lifetime of the app. Call once per attributes type
    /// at every launch.
    @discardableResult
    public func observe(_ provider: some ActivityProvider) -> Task<Void, Never> {
        Task { await self.run(provider) }
    }

    /// Reacts to one update (what `run` does per element).
    public func handle(_ update: ActivityUpdate) async {
        guard let client = try? client() else { return }
        switch update {
        case .activity(let id, let type):
            noteStarted(client, id: id, attributesType: type)
        case .pushToken(let id, let type, let token):
            noteStarted(client, id: id, attributesType: type)
            do { try await register(id: id, token: token, attributesType: type) } catch {
                Self.logFailure(
                    client, error, "live activity token not registered", ["activity.id": id, "attributesType": type])
            }
        case .pushToStartToken(let type, let token):
            do { try await registerPushToStartToken(token, attributesType: type) } catch {
                Self.logFailure(client, error, "push-to-start token not registered", ["attributesType": type])
            }
        case .state(let id, let type, let state):
            tracking.withLock { $0.types[id] = type }
            switch state {
            case .active: noteStarted(client, id: id, attributesType: type)
            case .stale:
                client.emit(ReservedEvent.activityStale, ["activityId": .string(id), "attributesType": .string(type)])
            case .ended, .dismissed: await finish(id: id, state: state)
            }
        }
    }

    // MARK: - Sending

    /// Sends what is kept and pending (a flush calls this). Stops at a network failure (the
    /// flush backs off) or once the server turns out to lack the routes.
    func sendPending() async -> BuzzKit.FlushPassResult {
        guard let client = try? client(), !tracking.withLock({ $0.serverLacksRoutes }) else { return .finished }
        let pending: [ActivityTokenRecord]
        do { pending = try await client.store.pendingActivityTokens() } catch {
            client.logger.error("cannot read kept live activity tokens", ["error": String(describing: error)])
            return .finished
        }
        for record in pending {
            do { try await deliver(client, record) } catch {
                switch error.code {
                case .unavailable: return .networkFailure
                case .serverLacksLiveActivities: return .finished
                default: continue
                }
            }
        }
        return .finished
    }

    private func keep(_ client: BuzzKit, _ record: ActivityTokenRecord) async {
        do { try await client.store.putActivityToken(record) } catch {
            client.logger.error("cannot keep a live activity token", ["error": String(describing: error)])
        }
    }

    /// Sends one kept record; on success (or a rejection, never retried) it stops being pending.
    private func deliver(_ client: BuzzKit, _ record: ActivityTokenRecord) async throws(ActivityRegistrationError) {
        let base = "/v1/subscribers/\(client.identity.value.pathEscaped)"
        let (method, path, body): (String, String, JSONValue?)
        switch record.kind {
        case .activity:
            var fields = client.tokenBody(hex: record.token ?? "")
            fields["attributesType"] = .string(record.attributesType)
            (method, path, body) = ("PUT", base + "/live-activities/\(record.key.pathEscaped)", .object(fields))
        case .pushToStart:
            (method, path, body) = (
                "PUT", base + "/live-activity-start-tokens/\(record.key.pathEscaped)",
                .object(client.tokenBody(hex: record.token ?? ""))
            )
        case .end:
            (method, path, body) = ("DELETE", base + "/live-activities/\(record.key.pathEscaped)", nil)
        }
        let route = "\(method) \(Self.routeShape(record.kind))"
        if tracking.withLock({ $0.serverLacksRoutes }) {
            throw ActivityRegistrationError(
                code: .serverLacksLiveActivities, status: 404,
                message: "the server has no \(route) route (Live Activities not supported yet); kept for a later launch"
            )
        }
        switch await client.api.call(method, path, body: body, as: client.anonymousId) {
        case .accepted:
            try? await client.store.activityTokenSent(record)
        case .rejected(let status, let error) where status == 404 && (error == nil || error?.code == .notFound):
            let first = tracking.withLock { t -> Bool in
                defer { t.serverLacksRoutes = true }
                return !t.serverLacksRoutes
            }
            if record.kind == .end { try? await client.store.activityTokenSent(record) }  // nothing to clear there
            if first {
                client.logger.error(
                    "the server has no Live Activity routes; tokens are kept and registered on a later launch",
                    ["route": route, "code": ActivityRegistrationError.Code.serverLacksLiveActivities.rawValue])
            }
            throw ActivityRegistrationError(
                code: .serverLacksLiveActivities, status: status,
                message: "the server has no \(route) route (Live Activities not supported yet); kept for a later launch"
            )
        case .rejected(let status, let error):
            try? await client.store.activityTokenSent(record)
            throw ActivityRegistrationError(code: .rejected, status: status, message: error?.message ?? "rejected")
        case .retryLater(let reason):
            throw ActivityRegistrationError(code: .unavailable, message: reason)
        }
    }

    private func noteStarted(_ client: BuzzKit, id: String, attributesType: String) {
        let first = tracking.withLock { t -> Bool in
            t.types[id] = attributesType
            return t.started.insert(id).inserted
        }
        if first {
            client.emit(
                ReservedEvent.activityStarted, ["activityId": .string(id), "attributesType": .string(attributesType)])
        }
    }

    private func finish(id: String, state: ActivityLifecycleState) async {
        guard let client = try? client() else { return }
        let (first, type) = tracking.withLock { t in
            (t.finished.insert(id + "#" + state.rawValue).inserted, t.types[id])
        }
        guard first else { return }
        let name = state == .dismissed ? ReservedEvent.activityDismissed : ReservedEvent.activityEnded
        client.emit(name, ["activityId": .string(id), "attributesType": .string(type ?? "unknown")])
        let record = ActivityTokenRecord(kind: .end, key: id, attributesType: type ?? "unknown", token: nil)
        await keep(client, record)
        do { try await deliver(client, record) } catch {
            Self.logFailure(client, error, "live activity end not sent", ["activity.id": id])
        }
    }

    /// Logs a failed call, except the server's lack of routes (logged once, when first seen).
    private static func logFailure(
        _ client: BuzzKit, _ error: ActivityRegistrationError, _ message: String,
        _ metadata: [String: String]
    ) {
        guard error.code != .serverLacksLiveActivities else { return }
        client.logger.error(message, metadata.merging(["error": error.description]) { a, _ in a })
    }

    private static func routeShape(_ kind: ActivityTokenRecord.Kind) -> String {
        switch kind {
        case .activity, .end: "/v1/subscribers/{id}/live-activities/{activityId}"
        case .pushToStart: "/v1/subscribers/{id}/live-activity-start-tokens/{attributesType}"
        }
    }

    static func hex(_ token: Data) -> String { Hex.string(token) }
}

extension BuzzKit {
    func tokenBody(hex: String) -> [String: JSONValue] {
        var body: [String: JSONValue] = [
            "token": .string(hex),
            "environment": .string((configuration.pushEnvironment ?? .detected).rawValue)
        ]
        if let bundle = configuration.bundleId { body["bundleId"] = .string(bundle) }
        return body
    }
}
