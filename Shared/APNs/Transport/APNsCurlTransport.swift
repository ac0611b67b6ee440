import BuzzKitCore
import BuzzKitHTTPClient

/// The former transport: libcurl's multi interface on its own thread (`HTTPClient`). Kept only
/// so the benchmarks can run the old client against the new in one sitting
/// (`BUZZKIT_APNS_TRANSPORT=curl`); it does not separate teams' connections itself (the pool's
/// one client per team does).
final class APNsCurlTransport: APNsTransport {
    private let http: HTTPClient
    private let baseURL: String

    init(baseURL: String, configuration: HTTPClient.Configuration, logger: Logger) throws {
        self.baseURL = baseURL
        http = try HTTPClient(configuration: configuration, logger: logger)
    }

    func send(_ requests: [APNsRequest], token: ProviderToken, team: String) async -> [APNsWireResult] {
        var httpRequests: [HTTPClientRequest] = []
        httpRequests.reserveCapacity(requests.count)
        var shared: SharedHeaders?
        for request in requests {
            if shared?.matches(request) != true { shared = SharedHeaders(request, token: token) }
            httpRequests.append(
                HTTPClientRequest(
                    method: .POST, url: baseURL + request.path, headers: shared!.sent(for: request),
                    body: request.payload))
        }
        let results = await http.execute(batch: httpRequests)
        return results.map { item in
            switch item.result {
            case .success(let response):
                return APNsWireResult(
                    status: response.status, headers: response.headers, body: response.body, error: nil,
                    finishedAt: item.finishedAt, openedConnection: response.newConnections > 0)
            case .failure(let error):
                return APNsWireResult(
                    status: 0, headers: HTTPHeaders(), body: [], error: error, finishedAt: item.finishedAt,
                    openedConnection: false)
            }
        }
    }

    var connectionsOpened: Int { http.connectionsOpened }

    func shutdown() async { await http.shutdown() }
}
