import BuzzKitWire
import Foundation

/// The API calls the SDK makes, over a `Transport`, with the client key.
struct APIClient: Sendable {
    let transport: any Transport
    let baseURL: URL
    let apiKey: String

    func call(_ method: String, _ path: String, body: JSONValue?) async -> APIOutcome {
        guard let url = URL(string: baseURL.absoluteString.trimmingTrailingSlash + path) else {
            return .rejected(status: 0, error: APIError(.badRequest, "cannot build a URL for \(path)"))
        }
        var headers = ["Authorization": "Bearer \(apiKey)", "Accept": "application/json"]
        var bytes: [UInt8] = []
        if let body {
            bytes = body.jsonBytes
            headers["Content-Type"] = "application/json"
        }
        do {
            let response = try await transport.send(TransportRequest(method: method, url: url, headers: headers, body: bytes))
            return APIOutcome.from(response)
        } catch {
            return .retryLater(reason: String(describing: error))
        }
    }

    /// `POST /v1/events`.
    func sendEvents(_ batch: EventBatch) async -> APIOutcome {
        await call("POST", "/v1/events", body: batch.jsonValue)
    }

    /// `POST /v1/identify {anonymousId, subscriberId}`.
    func identify(anonymousId: String, subscriberId: String) async -> APIOutcome {
        await call("POST", "/v1/identify", body: ["anonymousId": .string(anonymousId), "subscriberId": .string(subscriberId)])
    }

    /// `PUT /v1/subscribers/{id}/devices/{token}`.
    func registerDevice(subscriber: String, token: String, body: JSONValue) async -> APIOutcome {
        await call("PUT", "/v1/subscribers/\(subscriber.pathEscaped)/devices/\(token.pathEscaped)", body: body)
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
