import BuzzKitCore
import BuzzKitHTTP2
import BuzzKitHTTPClient
import Foundation
import Synchronization

/// APNs over `BuzzKitHTTP2`: one `HTTP2Client` (its own connections) per team, so two teams'
/// tokens never share a connection even if one `APNsClient` is handed both (the pool already
/// makes one client per team and environment).
///
/// A request goes out as: the fields its batch shares (`authorization`, `apns-push-type`,
/// `apns-topic`, `apns-priority`, `apns-expiration`, `apns-collapse-id`: one block per run of
/// requests that agree on them, indexed in HPACK, so the JWT costs a byte or two per request
/// after its first), then its own `apns-id` (never indexed), then `accept: */*` and
/// `content-length` (what libcurl sent, so the ledger's headers read the same with either
/// transport), then the payload.
final class APNsHTTP2Transport: APNsTransport {
    private let loop: HTTP2EventLoop
    /// The loop was made here (no shared one given): shut it down with the transport.
    private let ownsLoop: Bool
    private let baseURL: String
    private let configuration: HTTP2Client.Configuration
    private let logger: Logger
    private let clients = Mutex<[String: HTTP2Client]>([:])
    private let closed = Atomic<Bool>(false)

    init(
        baseURL: String, configuration: HTTP2Client.Configuration, eventLoop: HTTP2EventLoop?, logger: Logger
    ) throws {
        if let eventLoop {
            loop = eventLoop
            ownsLoop = false
        } else {
            loop = try HTTP2EventLoop(name: "bk-apns-h2", logger: logger)
            ownsLoop = true
        }
        self.baseURL = baseURL
        self.configuration = configuration
        self.logger = logger
        // Checks the URL and the CA file now, so a bad setting fails at start, not per push.
        _ = try client(team: "")
    }

    func send(_ requests: [APNsRequest], token: ProviderToken, team: String) async -> [APNsWireResult] {
        let client: HTTP2Client
        do {
            client = try self.client(team: team)
        } catch {
            let failure = HTTPClientError(
                code: HTTPClientError.Code(rawValue: error.code.rawValue), message: error.message)
            let now = ContinuousClock.now
            return requests.map { _ in
                APNsWireResult(
                    status: 0, headers: HTTPHeaders(), body: [], error: failure, finishedAt: now,
                    openedConnection: false)
            }
        }
        var wire: [HTTP2Request] = []
        wire.reserveCapacity(requests.count)
        var shape: Shape?
        var shared = HTTP2HeaderBlock.empty
        var trailing: (length: Int, block: HTTP2HeaderBlock) = (-1, .empty)
        for request in requests {
            if shape?.matches(request) != true {
                shape = Shape(request)
                var bare = request
                bare.apnsId = nil
                shared = HTTP2HeaderBlock(bare.headers(authorization: token.authorization))
            }
            if trailing.length != request.payload.count {
                trailing = (
                    request.payload.count,
                    HTTP2HeaderBlock(["accept": "*/*", "content-length": String(request.payload.count)])
                )
            }
            wire.append(
                HTTP2Request(
                    method: .POST, path: request.path, headers: shared,
                    uniqueField: request.apnsId.map { HTTPHeaders.Field(name: "apns-id", value: $0) },
                    trailingHeaders: trailing.block, body: request.payload))
        }
        let results = await client.execute(batch: wire)
        return results.map { item in
            switch item.result {
            case .success(let response):
                return APNsWireResult(
                    status: response.status, headers: response.headers, body: response.body, error: nil,
                    finishedAt: item.finishedAt, openedConnection: response.openedConnection)
            case .failure(let error):
                return APNsWireResult(
                    status: 0, headers: HTTPHeaders(), body: [],
                    error: HTTPClientError(
                        code: HTTPClientError.Code(rawValue: error.code.rawValue), message: error.message),
                    finishedAt: item.finishedAt, openedConnection: false)
            }
        }
    }

    var connectionsOpened: Int {
        clients.withLock { $0.values.reduce(0) { $0 + $1.statistics.connections } }
    }

    /// The statistics of `team`'s connections (tests and benchmarks).
    func statistics(team: String) -> HTTP2ClientStatistics? { clients.withLock { $0[team]?.statistics } }

    func shutdown() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        let all = clients.withLock { clients -> [HTTP2Client] in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all { await client.shutdown() }
        if ownsLoop { await loop.shutdown() }
    }

    private func client(team: String) throws(HTTP2Error) -> HTTP2Client {
        try clients.withLock { (clients: inout [String: HTTP2Client]) throws(HTTP2Error) -> HTTP2Client in
            if let client = clients[team] { return client }
            if closed.load(ordering: .relaxed) { throw HTTP2Error(.shutdown, "the APNs client was shut down") }
            let client = try HTTP2Client(
                baseURL: baseURL, configuration: configuration, eventLoop: loop, logger: logger)
            if !team.isEmpty { clients[team] = client }
            return client
        }
    }
}

/// The fields a run of requests shares besides the token: a new header block when one changes.
private struct Shape {
    let pushType: APNsPushType
    let topic: String
    let priority: Int?
    let expiration: Date?
    let collapseId: String?

    init(_ request: APNsRequest) {
        pushType = request.pushType
        topic = request.topic
        priority = request.priority
        expiration = request.expiration
        collapseId = request.collapseId
    }

    func matches(_ request: APNsRequest) -> Bool {
        request.pushType == pushType && request.topic == topic && request.priority == priority
            && request.expiration == expiration && request.collapseId == collapseId
    }
}
