import BuzzKitCore
import BuzzKitHTTP2
import BuzzKitHTTPClient
import BuzzKitWire
import Foundation

/// Sends pushes to one APNs host over HTTP/2: many requests multiplexed as streams on few TLS
/// connections, on an event-loop thread of its own or shared (`HTTP2EventLoop`, nghttp2 and
/// OpenSSL; see docs/apns-client.md). The payloads, tokens and results are the APNs core's
/// (APNsRequest, ProviderToken, APNsResponse); the wire is the transport's (Transport/).
///
/// Make one per (team, environment) or per host and share it (`Sendable`); JWTs come from the
/// shared `APNsTokenCache`. `send` never throws: every attempt ends in an `APNsResponse` that says
/// what APNs answered or why nothing came back, with the headers as sent (JWT redacted) for the
/// delivery ledger. Call `shutdown()` when done.
public final class APNsClient: Sendable {
    /// Knobs, each with a default for Apple's service.
    public struct Configuration: Sendable {
        /// `https://host[:port]` without a trailing slash. Default: Apple's host for the environment.
        public var baseURL: String
        /// A CA file to trust instead of the system store (the simulator's `ca.pem`). Default nil.
        public var caFile: String?
        /// Most streams per connection; the server's SETTINGS lower it (APNs allows up to 1000).
        /// Default 1000.
        public var maxConcurrentStreams: Int
        /// Most connections per team to the host (a draining one, after a GOAWAY, not counted);
        /// a further one opens only while every open one is full. Nil: 2. Default 2.
        public var maxConnections: Int?
        /// Limit for one attempt (queueing for a stream, connect, send, answer). Default 10 s.
        public var requestTimeout: Duration
        /// Default 5 s.
        public var connectTimeout: Duration
        /// TCP_NODELAY on the connections. Default true.
        public var tcpNoDelay: Bool = true
        /// Backpressure (nghttp2): most requests admitted and unanswered per team; more wait
        /// before they are admitted. Nil: connections x streams. Default nil.
        public var maxOutstandingRequests: Int?

        public init(
            environment: APNsEnvironment, baseURL: String? = nil, caFile: String? = nil,
            maxConcurrentStreams: Int = 1000, maxConnections: Int? = 2,
            requestTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(5)
        ) {
            var url = baseURL ?? environment.defaultBaseURL
            while url.hasSuffix("/") { url.removeLast() }
            self.baseURL = url
            self.caFile = caFile
            self.maxConcurrentStreams = maxConcurrentStreams
            self.maxConnections = maxConnections
            self.requestTimeout = requestTimeout
            self.connectTimeout = connectTimeout
        }

        /// What the nghttp2 transport's clients are made with.
        var http2: HTTP2Client.Configuration {
            let connections = maxConnections ?? 2
            return HTTP2Client.Configuration(
                caFile: caFile, maxConnections: connections, maxConcurrentStreams: maxConcurrentStreams,
                maxOutstandingRequests: maxOutstandingRequests ?? connections * maxConcurrentStreams,
                requestTimeout: requestTimeout, connectTimeout: connectTimeout, tcpNoDelay: tcpNoDelay)
        }
    }

    public let configuration: Configuration
    public let tokenCache: APNsTokenCache
    let transport: any APNsTransport
    let logger: Logger

    /// `eventLoop`: the thread the connections live on, shared by the clients of a process
    /// (`APNsClientPool` passes its own); nil makes one for this client, stopped by `shutdown()`.
    /// Throws when the URL is not https or the CA file cannot be read.
    public init(
        configuration: Configuration, tokenCache: APNsTokenCache, logger: Logger, eventLoop: HTTP2EventLoop? = nil
    ) throws {
        self.configuration = configuration
        self.tokenCache = tokenCache
        self.logger = logger
        transport = try APNsHTTP2Transport(
            baseURL: configuration.baseURL, configuration: configuration.http2, eventLoop: eventLoop, logger: logger)
    }

    /// Sends one attempt with the current provider token for `credentials`.
    ///
    /// Credentials that cannot sign give status 0 and a `transportError` with code
    /// `invalid_request` (classified `failed`), never a crash.
    public func send(_ request: APNsRequest, credentials: APNsCredentials) async -> APNsResponse {
        switch providerToken(for: credentials) {
        case .success(let token): return await send(request, token: token)
        case .failure(let error): return Self.unsigned(request, error)
        }
    }

    /// The current provider token for `credentials`; a failure to sign is logged here.
    func providerToken(for credentials: APNsCredentials) -> Result<ProviderToken, APNsCredentialsError> {
        do {
            return .success(try tokenCache.token(for: credentials))
        } catch {
            logger.warning(
                "apns provider token could not be made",
                metadata: [
                    "apns.team": credentials.teamId, "apns.key": credentials.keyId, "error.code": error.code.rawValue
                ])
            return .failure(error)
        }
    }

    /// The answer for a request whose credentials cannot sign: status 0 and a `transportError`
    /// with code `invalid_request` (classified `failed`, no retry).
    static func unsigned(_ request: APNsRequest, _ error: APNsCredentialsError) -> APNsResponse {
        APNsResponse(
            status: 0, requestHeaders: request.headers(authorization: nil), payload: request.payload,
            transportError: HTTPClientError(code: .invalidRequest, message: error.description))
    }

    /// Sends one attempt with a given provider token (for tests of token handling, or callers
    /// managing tokens themselves).
    public func send(_ request: APNsRequest, token: ProviderToken) async -> APNsResponse {
        await send(batch: [request], token: token)[0]
    }

    /// How many TLS connections this client opened so far (stays small with HTTP/2 multiplexing).
    public var connectionsOpened: Int { transport.connectionsOpened }

    /// The nghttp2 transport's counters for `team`'s connections (GOAWAYs, resent requests,
    /// peak streams); nil with the curl transport or before the team's first push.
    public func transportStatistics(team: String) -> HTTP2ClientStatistics? {
        (transport as? APNsHTTP2Transport)?.statistics(team: team)
    }

    /// Fails requests still in flight and closes the connections (and the client's own thread).
    public func shutdown() async { await transport.shutdown() }

    /// Reads status, `apns-id`, `apns-unique-id`, `retry-after` and the JSON body
    /// `{"reason", "timestamp"}`.
    static func parse(status: Int, headers: HTTPHeaders, body: [UInt8], latency: Duration) -> APNsResponse {
        var result = APNsResponse(status: status, latency: latency)
        result.apnsId = headers["apns-id"]
        result.uniqueId = headers["apns-unique-id"]
        if status != 200 {
            if !body.isEmpty, let json = try? JSONValue.parse(body) {
                if let reason = json["reason"]?.stringValue { result.reason = APNsReason(rawValue: reason) }
                if let ms = json["timestamp"]?.doubleValue { result.timestamp = Date(timeIntervalSince1970: ms / 1000) }
            }
            if result.reason == nil { result.reason = Self.defaultReason(status: status) }
            if let text = headers["retry-after"] { result.retryAfter = RetryAfter.parse(text, now: Date()) }
        }
        return result
    }

    private static func defaultReason(status: Int) -> APNsReason? {
        switch status {
        case 429: .tooManyRequests
        case 500: .internalServerError
        case 503: .serviceUnavailable
        default: nil
        }
    }
}
