import BuzzKitWire
import Foundation

/// The per-installation secrets a client key needs (`BuzzKit-Installation: bk_inst_...`).
///
/// A client key ships inside the app, so the server tells installations apart by a secret each
/// one gets from `POST /v1/installations {anonymousId}` (shown once; the SDK keeps it in its
/// SQLite store, shared with the notification service extension). The registry registers lazily,
/// before the first other request made as an anonymous id, one registration at a time per id.
/// After `reset()` the new anonymous id gets a new installation; the old one stays in the store so
/// events queued under the old identity still go out with the secret that may send them.
///
/// A server that has no `POST /v1/installations` (404 `not_found`) predates installations: the
/// SDK then sends requests without the header for the rest of the process.
actor InstallationRegistry {
    /// What `token(for:)` found.
    enum Lookup: Sendable {
        case token(String)
        /// The server has no installations (send without the header).
        case notRequired
        /// Registration failed: the call it was for ends with this outcome.
        case failed(APIOutcome)
    }

    static let header = "BuzzKit-Installation"

    private let store: EventStore
    private let transport: any Transport
    private let baseURL: URL
    private let apiKey: String
    private let logger: SDKLogger
    private var cache: [String: String] = [:]
    private var registering: [String: Task<Lookup, Never>] = [:]
    private var serverLacksInstallations = false

    init(store: EventStore, transport: any Transport, baseURL: URL, apiKey: String, logger: SDKLogger) {
        self.store = store
        self.transport = transport
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.logger = logger
    }

    /// Whether `apiKey` needs installation tokens: client keys (`bk_ck_...`) only.
    static func needed(for apiKey: String) -> Bool { apiKey.hasPrefix("bk_ck_") }

    /// The token of `anonymousId`'s installation, registering it first when there is none.
    func token(for anonymousId: String) async -> Lookup {
        if serverLacksInstallations { return .notRequired }
        if let token = cache[anonymousId] { return .token(token) }
        if let running = registering[anonymousId] { return await running.value }
        let task = Task { await self.lookUpOrRegister(anonymousId) }
        registering[anonymousId] = task
        let result = await task.value
        registering[anonymousId] = nil
        return result
    }

    /// The anonymous id whose installation may send as `identity`: the anonymous id itself, or
    /// the installation identified as that subscriber (else `current`, which identify is about to link).
    func anonymousId(for identity: EventIdentity, current: String) async -> String {
        guard case .subscriber(let subscriber) = identity else { return identity.value }
        return (try? await store.installationAnonymousId(subscriberId: subscriber)) ?? current
    }

    /// The server refused `token` (401): forget it, so the next lookup registers again.
    func drop(_ token: String, anonymousId: String) async {
        if cache[anonymousId] == token { cache[anonymousId] = nil }
        do { try await store.dropInstallationToken(anonymousId: anonymousId, token: token) } catch {
            logger.error("cannot drop the installation token", ["error": String(describing: error)])
        }
    }

    /// `identify` went through: the installation of `anonymousId` is now also `subscriberId`.
    func identified(_ subscriberId: String, anonymousId: String) async {
        do { try await store.setInstallationSubscriber(subscriberId, anonymousId: anonymousId) } catch {
            logger.error("cannot record the installation's subscriber", ["error": String(describing: error)])
        }
    }

    // MARK: - Registration

    private func lookUpOrRegister(_ anonymousId: String) async -> Lookup {
        let stored: InstallationRecord?
        do { stored = try await store.installation(anonymousId: anonymousId) } catch {
            logger.error("cannot read the installation token", ["error": String(describing: error)])
            return .failed(.retryLater(reason: "storage: \(error)"))
        }
        if let token = stored?.token {
            cache[anonymousId] = token
            return .token(token)
        }
        let outcome = await send(
            TransportRequest(
                method: "POST", url: url("/v1/installations"), headers: headers(),
                body: JSONValue.object(["anonymousId": .string(anonymousId)]).jsonBytes))
        switch outcome {
        case .accepted(let data):
            guard let token = data?["token"]?.stringValue, !token.isEmpty else {
                logger.error("installation registered without a token in the answer")
                return .failed(.retryLater(reason: "no installation token in the answer"))
            }
            do { try await store.storeInstallation(anonymousId: anonymousId, token: token) } catch {
                logger.error("cannot store the installation token", ["error": String(describing: error)])
            }
            cache[anonymousId] = token
            logger.info("installation registered")
            if let subscriber = stored?.subscriberId { await identifyAgain(anonymousId, subscriber, token: token) }
            return .token(token)
        case .rejected(404, let error) where error == nil || error?.code == .notFound:
            serverLacksInstallations = true
            logger.warning("the server has no installations route; requests go without an installation token")
            return .notRequired
        case .rejected(409, _):
            // Another process (the notification service extension) may have registered it first.
            if let token = try? await store.installation(anonymousId: anonymousId)?.token {
                cache[anonymousId] = token
                return .token(token)
            }
            logger.error("installation exists on the server but its token is lost", ["status": "409"])
            return .failed(outcome)
        case .rejected(let status, let error):
            logger.error(
                "installation registration rejected by the API",
                ["status": String(status), "error.code": error?.code.rawValue ?? ""])
            return .failed(outcome)
        case .retryLater(let reason):
            logger.warning("installation not registered; retried with the next request", ["reason": reason])
            return .failed(outcome)
        }
    }

    /// A new installation for an anonymous id that had been identified: link it again, so the
    /// subscriber's queued events are accepted from it.
    private func identifyAgain(_ anonymousId: String, _ subscriberId: String, token: String) async {
        var headers = headers()
        headers[Self.header] = token
        let body = JSONValue.object(["anonymousId": .string(anonymousId), "subscriberId": .string(subscriberId)])
        let outcome = await send(
            TransportRequest(method: "POST", url: url("/v1/identify"), headers: headers, body: body.jsonBytes))
        if case .accepted = outcome { return }
        logger.warning("the new installation could not be identified again", ["outcome": String(describing: outcome)])
    }

    private func headers() -> [String: String] {
        ["Authorization": "Bearer \(apiKey)", "Accept": "application/json", "Content-Type": "application/json"]
    }

    private func url(_ path: String) -> URL {
        URL(string: baseURL.absoluteString.trimmingTrailingSlash + path) ?? baseURL
    }

    private func send(_ request: TransportRequest) async -> APIOutcome {
        do { return APIOutcome.from(try await transport.send(request)) } catch {
            return .retryLater(reason: String(describing: error))
        }
    }
}
