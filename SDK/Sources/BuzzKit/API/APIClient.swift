import BuzzKitWire
import Foundation

/// The API calls the SDK makes, over a `Transport`, with the client key.
///
/// With a client key every call is made as one installation (an anonymous id): its token goes in
/// the `BuzzKit-Installation` header, registered first when there is none. A 401
/// `installation_required` or `unauthorized` for a stored token drops it and registers again,
/// once per call.
struct APIClient: Sendable {
    let transport: any Transport
    let baseURL: URL
    let apiKey: String
    /// Nil for keys that need no installation token (anything but a client key).
    let installations: InstallationRegistry?

    init(transport: any Transport, baseURL: URL, apiKey: String, store: EventStore, logger: SDKLogger) {
        self.transport = transport
        self.baseURL = baseURL
        self.apiKey = apiKey
        installations =
            InstallationRegistry.needed(for: apiKey)
            ? InstallationRegistry(store: store, transport: transport, baseURL: baseURL, apiKey: apiKey, logger: logger)
            : nil
    }

    /// Sends one request as the installation of `anonymousId` (nil: without an installation).
    func call(
        _ method: String, _ path: String, body: JSONValue?, as anonymousId: String?,
        headers extra: [String: String] = [:]
    ) async -> APIOutcome {
        guard let url = URL(string: baseURL.absoluteString.trimmingTrailingSlash + path) else {
            return .rejected(status: 0, error: APIError(.badRequest, "cannot build a URL for \(path)"))
        }
        var headers = extra.merging(["Authorization": "Bearer \(apiKey)", "Accept": "application/json"]) { _, new in
            new
        }
        var bytes: [UInt8] = []
        if let body {
            bytes = body.jsonBytes
            headers["Content-Type"] = "application/json"
        }
        guard let installations, let anonymousId else {
            return await send(TransportRequest(method: method, url: url, headers: headers, body: bytes)).outcome
        }
        for attempt in 0..<2 {
            switch await installations.token(for: anonymousId) {
            case .failed(let outcome):
                return outcome
            case .notRequired:
                return await send(TransportRequest(method: method, url: url, headers: headers, body: bytes)).outcome
            case .token(let token):
                headers[InstallationRegistry.header] = token
                let (outcome, response) = await send(
                    TransportRequest(method: method, url: url, headers: headers, body: bytes))
                if attempt == 0, response?.status == 401, case .rejected(_, let error) = outcome,
                    ["installation_required", "unauthorized"].contains(error?.code.rawValue ?? "")
                {
                    await installations.drop(token, anonymousId: anonymousId)
                    continue
                }
                return outcome
            }
        }
        return .rejected(status: 401, error: APIError(.unauthorized, "the installation token was refused"))
    }

    private func send(_ request: TransportRequest) async -> (outcome: APIOutcome, response: TransportResponse?) {
        do {
            let response = try await transport.send(request)
            return (APIOutcome.from(response), response)
        } catch {
            return (.retryLater(reason: String(describing: error)), nil)
        }
    }

    /// The anonymous id whose installation sends `identity`'s events.
    func sender(for identity: EventIdentity, current: String) async -> String {
        await installations?.anonymousId(for: identity, current: current) ?? current
    }

    /// `POST /v1/events`, as the installation that may send this batch's identity.
    func sendEvents(_ batch: EventBatch, currentAnonymousId: String) async -> APIOutcome {
        let sender = await sender(for: batch.identity, current: currentAnonymousId)
        return await call("POST", "/v1/events", body: batch.jsonValue, as: sender)
    }

    /// `POST /v1/identify {anonymousId, subscriberId, signature?}`, as that anonymous id's installation.
    func identify(anonymousId: String, subscriberId: String, signature: String?) async -> APIOutcome {
        var body: [String: JSONValue] = ["anonymousId": .string(anonymousId), "subscriberId": .string(subscriberId)]
        if let signature { body["signature"] = .string(signature) }
        let outcome = await call("POST", "/v1/identify", body: .object(body), as: anonymousId)
        if case .accepted = outcome { await installations?.identified(subscriberId, anonymousId: anonymousId) }
        return outcome
    }

    /// `GET /v1/subscribers/{id}/preferences`, with the subscriber's signature.
    func preferences(subscriber: String, signature: String, as anonymousId: String) async -> APIOutcome {
        await call(
            "GET", "/v1/subscribers/\(subscriber.pathEscaped)/preferences", body: nil, as: anonymousId,
            headers: [Self.signatureHeader: signature])
    }

    /// `PUT /v1/subscribers/{id}/preferences {all?, categories?}`, with the subscriber's signature
    /// (the server records a client key's change with source `sdk`).
    func changePreferences(subscriber: String, signature: String, _ change: PreferenceChange, as anonymousId: String)
        async -> APIOutcome
    {
        await call(
            "PUT", "/v1/subscribers/\(subscriber.pathEscaped)/preferences", body: change.jsonValue, as: anonymousId,
            headers: [Self.signatureHeader: signature])
    }

    /// The header that carries the tenant backend's signature of the subscriber id.
    static let signatureHeader = "BuzzKit-Subscriber-Signature"

    /// `PUT /v1/subscribers/{id}/devices/{token}`.
    func registerDevice(subscriber: String, token: String, body: JSONValue, as anonymousId: String) async -> APIOutcome
    {
        await call(
            "PUT", "/v1/subscribers/\(subscriber.pathEscaped)/devices/\(token.pathEscaped)", body: body, as: anonymousId
        )
    }
}

extension String {
    var pathEscaped: String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#")
        return addingPercentEncoding(withAllowedCharacters: allowed) ?? self
    }

    var trimmingTrailingSlash: String { hasSuffix("/") ? String(dropLast()) : self }
}
