import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Transport` over `URLSession` (the real one on iOS; works on Linux through FoundationNetworking).
///
/// Default timeout 30 s per request (the notification service extension passes a shorter one).
public final class URLSessionTransport: Transport {
    private let session: URLSession
    private let timeout: TimeInterval

    public init(session: URLSession = .shared, timeout: TimeInterval = 30) {
        self.session = session
        self.timeout = timeout
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if !request.body.isEmpty { urlRequest.httpBody = Data(request.body) }
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch {
            throw TransportError(String(describing: error))
        }
        guard let http = response as? HTTPURLResponse else { throw TransportError("not an HTTP response") }
        return TransportResponse(status: http.statusCode, body: Array(data))
    }
}
