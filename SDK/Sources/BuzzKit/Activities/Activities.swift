import BuzzKitWire
import Foundation
import Synchronization

/// Keeps Live Activity push tokens registered with BuzzKit and reports `$activity.*` events.
///
/// Server routes (the Live Activities server issue implements them; until then each call fails
/// with `ActivityRegistrationError.Code.serverLacksLiveActivities` and is logged as an error):
/// - `PUT /v1/subscribers/{id}/live-activities/{activityId}` `{attributesType, token, environment, bundleId}`
/// - `PUT /v1/subscribers/{id}/live-activity-start-tokens/{attributesType}` `{token, environment, bundleId}`
/// - `DELETE /v1/subscribers/{id}/live-activities/{activityId}` (the activity ended or was dismissed)
///
/// Tokens are hex; `{id}` is the identified subscriber (or the anonymous id before `identify`).
/// Registration is idempotent on the server, so re-registering a token changes nothing.
public final class Activities: Sendable {
    private struct WeakClient: @unchecked Sendable {
        // @unchecked: only the weak reference itself, read and written under the Mutex.
        weak var client: BuzzKit?
    }

    private struct Tracking: Sendable {
        var started: Set<String> = []
        var finished: Set<String> = []
        var types: [String: String] = [:]
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

    /// Registers (or re-registers after a rotation) an activity's push token.
    public func register(id: String, token: Data, attributesType: String) async throws(ActivityRegistrationError) {
        let client = try client()
        tracking.withLock { $0.types[id] = attributesType }
        var body = client.tokenBody(token)
        body["attributesType"] = .string(attributesType)
        try await send(client, "PUT", "/v1/subscribers/\(client.identity.value.pathEscaped)/live-activities/\(id.pathEscaped)",
                       body: .object(body))
    }

    /// Registers the push-to-start token of an attributes type (iOS 17.2 and later).
    public func registerPushToStartToken(_ token: Data, attributesType: String) async throws(ActivityRegistrationError) {
        let client = try client()
        try await send(client, "PUT",
                       "/v1/subscribers/\(client.identity.value.pathEscaped)/live-activity-start-tokens/\(attributesType.pathEscaped)",
                       body: .object(client.tokenBody(token)))
    }

    /// The activity ended (from the app): tracks `$activity.ended` and tells the server to stop
    /// updating it. Failures are logged; the event is queued either way.
    public func end(id: String) async {
        await finish(id: id, state: .ended)
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
                client.logger.error("live activity token not registered",
                                    ["activity.id": id, "attributesType": type, "error": error.description])
            }
        case .pushToStartToken(let type, let token):
            do { try await registerPushToStartToken(token, attributesType: type) } catch {
                client.logger.error("push-to-start token not registered", ["attributesType": type, "error": error.description])
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

    private func noteStarted(_ client: BuzzKit, id: String, attributesType: String) {
        let first = tracking.withLock { t -> Bool in
            t.types[id] = attributesType
            return t.started.insert(id).inserted
        }
        if first {
            client.emit(ReservedEvent.activityStarted, ["activityId": .string(id), "attributesType": .string(attributesType)])
        }
    }

    private func finish(id: String, state: ActivityLifecycleState) async {
        guard let client = try? client() else { return }
        let (first, type) = tracking.withLock { t in (t.finished.insert(id + "#" + state.rawValue).inserted, t.types[id]) }
        guard first else { return }
        let name = state == .dismissed ? ReservedEvent.activityDismissed : ReservedEvent.activityEnded
        client.emit(name, ["activityId": .string(id), "attributesType": .string(type ?? "unknown")])
        do {
            try await send(client, "DELETE", "/v1/subscribers/\(client.identity.value.pathEscaped)/live-activities/\(id.pathEscaped)",
                           body: nil)
        } catch {
            client.logger.error("live activity end not sent", ["activity.id": id, "error": error.description])
        }
    }

    private func send(_ client: BuzzKit, _ method: String, _ path: String, body: JSONValue?) async throws(ActivityRegistrationError) {
        switch await client.api.call(method, path, body: body) {
        case .accepted:
            return
        case .rejected(let status, let error) where status == 404 && (error == nil || error?.code == .notFound):
            throw ActivityRegistrationError(code: .serverLacksLiveActivities, status: status,
                                            message: "the server has no \(method) \(Self.routeShape(path)) route (Live Activities not supported yet)")
        case .rejected(let status, let error):
            throw ActivityRegistrationError(code: .rejected, status: status, message: error?.message ?? "rejected")
        case .retryLater(let reason):
            throw ActivityRegistrationError(code: .unavailable, message: reason)
        }
    }

    private static func routeShape(_ path: String) -> String {
        let parts = path.split(separator: "/")
        guard parts.count >= 5 else { return path }
        return "/v1/subscribers/{id}/\(parts[3])/{\(parts[3] == "live-activities" ? "activityId" : "attributesType")}"
    }
}

extension BuzzKit {
    func tokenBody(_ token: Data) -> [String: JSONValue] {
        var body: [String: JSONValue] = [
            "token": .string(token.map { String(format: "%02x", $0) }.joined()),
            "environment": .string((configuration.pushEnvironment ?? .detected).rawValue),
        ]
        if let bundle = configuration.bundleId { body["bundleId"] = .string(bundle) }
        return body
    }
}
