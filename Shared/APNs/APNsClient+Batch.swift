import BuzzKitCore
import BuzzKitHTTPClient
import Foundation

extension APNsClient {
    /// Sends one attempt of every request at once, multiplexed on the client's connections, and
    /// returns one response per request, in order (as `send(_:credentials:)` would for each).
    ///
    /// Why: a delivery chunk is a few hundred pushes that differ only in device token and
    /// `apns-id`. Here the provider token is looked up once, the headers shared by consecutive
    /// requests are built once, and the whole batch costs one submission to the transport and
    /// one suspension, instead of a task, a continuation and two header lists per push.
    /// `latency` is measured per request, from the submission to the moment its answer arrived.
    public func send(batch requests: [APNsRequest], credentials: APNsCredentials) async -> [APNsResponse] {
        guard !requests.isEmpty else { return [] }
        switch providerToken(for: credentials) {
        case .success(let token): return await send(batch: requests, token: token)
        case .failure(let error): return requests.map { Self.unsigned($0, error) }
        }
    }

    /// One attempt of each request with `token` (the batch's team is the token's).
    func send(batch requests: [APNsRequest], token: ProviderToken) async -> [APNsResponse] {
        guard !requests.isEmpty else { return [] }
        let sentAt = Date()
        let start = ContinuousClock.now
        let results = await transport.send(requests, token: token, team: token.teamId)
        var responses: [APNsResponse] = []
        responses.reserveCapacity(requests.count)
        // The ledger's copy of each request's headers: as sent, the JWT redacted (made here, as
        // each response is, not kept in an array of their own while the batch is out).
        var shared: SharedHeaders?
        for (index, item) in results.enumerated() {
            let latency = item.finishedAt - start
            var response: APNsResponse
            if let error = item.error {
                logger.debug("apns request failed", metadata: ["error.code": error.code.rawValue])
                response = APNsResponse(status: 0, latency: latency, transportError: error)
            } else {
                response = Self.parse(status: item.status, headers: item.headers, body: item.body, latency: latency)
                response.openedConnection = item.openedConnection
            }
            response.sentAt = sentAt
            let request = requests[index]
            if shared?.matches(request) != true { shared = SharedHeaders(request, token: token) }
            response.requestHeaders = shared!.redacted(for: request)
            response.payload = request.payload
            response.tokenIssuedAt = token.issuedAt
            responses.append(response)
        }
        return responses
    }
}

/// The ledger's copy of the headers of consecutive requests that differ only in token, `apns-id`
/// and payload: built once, then copied with the request's own `apns-id` and the two fields the
/// transport sends after it (`accept: */*` and `content-length`). It is exactly
/// `request.headers(authorization:)`, the JWT redacted, plus those.
struct SharedHeaders {
    let pushType: APNsPushType
    let topic: String
    let priority: Int?
    let expiration: Date?
    let collapseId: String?
    let redacted: HTTPHeaders
    var contentLength: (count: Int, text: String) = (-1, "")

    init(_ request: APNsRequest, token: ProviderToken) {
        pushType = request.pushType
        topic = request.topic
        priority = request.priority
        expiration = request.expiration
        collapseId = request.collapseId
        var bare = request
        bare.apnsId = nil
        redacted = bare.headers(authorization: token.redactedAuthorization)
    }

    func matches(_ request: APNsRequest) -> Bool {
        request.pushType == pushType && request.topic == topic && request.priority == priority
            && request.expiration == expiration && request.collapseId == collapseId
    }

    /// What the ledger records: the sent fields, the JWT redacted.
    mutating func redacted(for request: APNsRequest) -> HTTPHeaders {
        var redacted = self.redacted
        if let apnsId = request.apnsId { redacted.add(name: "apns-id", value: apnsId) }
        if contentLength.count != request.payload.count {
            contentLength = (request.payload.count, String(request.payload.count))
        }
        redacted.add(name: "accept", value: "*/*")
        redacted.add(name: "content-length", value: contentLength.text)
        return redacted
    }
}
