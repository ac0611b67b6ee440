import BuzzKitCore
import BuzzKitHTTPClient

/// What `APNsClient` needs of a transport: one attempt of each request, in order, with the
/// provider token given, on connections that carry only `team`'s tokens.
protocol APNsTransport: Sendable {
    func send(_ requests: [APNsRequest], token: ProviderToken, team: String) async -> [APNsWireResult]
    /// Connections opened so far.
    var connectionsOpened: Int { get }
    func shutdown() async
}

/// One attempt as the transport saw it: the answer's status, fields and body, or why none came.
struct APNsWireResult: Sendable {
    /// 0 when no response arrived (`error` says why).
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
    var error: HTTPClientError?
    var finishedAt: ContinuousClock.Instant
    var openedConnection: Bool
}
