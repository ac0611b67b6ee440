import BuzzKitCore
import BuzzKitHTTPClient
import Foundation

extension APNsClient {
    /// Sends one attempt of every request at once, multiplexed on the client's connections, and
    /// returns one response per request, in order (as `send(_:credentials:)` would for each).
    ///
    /// Why: a delivery chunk is a few hundred pushes that differ only in device token and
    /// `apns-id`. Here the provider token is looked up once, the headers shared by consecutive
    /// requests are built once, and the whole batch costs one submission to the HTTP client and
    /// one suspension, instead of a task, a continuation and two header lists per push.
    /// `latency` is measured per request, from the submission to the moment its answer arrived.
    public func send(batch requests: [APNsRequest], credentials: APNsCredentials) async -> [APNsResponse] {
        guard !requests.isEmpty else { return [] }
        let token: ProviderToken
        switch providerToken(for: credentials) {
        case .success(let signed): token = signed
        case .failure(let error): return requests.map { Self.unsigned($0, error) }
        }
        var httpRequests: [HTTPClientRequest] = []
        var ledgerHeaders: [HTTPHeaders] = []
        httpRequests.reserveCapacity(requests.count)
        ledgerHeaders.reserveCapacity(requests.count)
        var shared: SharedHeaders?
        for request in requests {
            if shared?.matches(request) != true { shared = SharedHeaders(request, token: token) }
            let (sent, redacted) = shared!.headers(for: request)
            httpRequests.append(
                HTTPClientRequest(
                    method: .POST, url: configuration.baseURL + request.path, headers: sent,
                    body: request.payload))
            ledgerHeaders.append(redacted)
        }
        let sentAt = Date()
        let start = ContinuousClock.now
        let results = await http.execute(batch: httpRequests)
        var responses: [APNsResponse] = []
        responses.reserveCapacity(requests.count)
        for (index, item) in results.enumerated() {
            let latency = item.finishedAt - start
            switch item.result {
            case .success(let response):
                var result = Self.parse(response, latency: latency)
                result.sentAt = sentAt
                result.requestHeaders = ledgerHeaders[index]
                result.payload = requests[index].payload
                result.tokenIssuedAt = token.issuedAt
                responses.append(result)
            case .failure(let error):
                logger.debug("apns request failed", metadata: ["error.code": error.code.rawValue])
                responses.append(
                    APNsResponse(
                        status: 0, sentAt: sentAt, latency: latency, requestHeaders: ledgerHeaders[index],
                        payload: requests[index].payload, transportError: error,
                        tokenIssuedAt: token.issuedAt))
            }
        }
        return responses
    }
}

/// The headers of consecutive requests that differ only in token, `apns-id` and payload: built
/// once, then copied with the request's own `apns-id` (and, for the ledger, the two headers
/// libcurl adds). The result is exactly `request.headers(authorization:)` plus those.
private struct SharedHeaders {
    let pushType: APNsPushType
    let topic: String
    let priority: Int?
    let expiration: Date?
    let collapseId: String?
    let sent: HTTPHeaders
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
        sent = bare.headers(authorization: token.authorization)
        redacted = bare.headers(authorization: token.redactedAuthorization)
    }

    func matches(_ request: APNsRequest) -> Bool {
        request.pushType == pushType && request.topic == topic && request.priority == priority
            && request.expiration == expiration && request.collapseId == collapseId
    }

    mutating func headers(for request: APNsRequest) -> (sent: HTTPHeaders, redacted: HTTPHeaders) {
        var sent = self.sent, redacted = self.redacted
        if let apnsId = request.apnsId {
            sent.add(name: "apns-id", value: apnsId)
            redacted.add(name: "apns-id", value: apnsId)
        }
        if contentLength.count != request.payload.count {
            contentLength = (request.payload.count, String(request.payload.count))
        }
        // libcurl adds these two on the wire; the ledger shows what APNs actually received.
        redacted.add(name: "accept", value: "*/*")
        redacted.add(name: "content-length", value: contentLength.text)
        return (sent, redacted)
    }
}
