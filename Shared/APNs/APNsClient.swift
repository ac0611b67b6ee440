import BuzzKitCore
import BuzzKitHTTPClient
import BuzzKitWire
import Foundation

/// Sends pushes to one APNs host over HTTP/2: many requests multiplexed as streams on few TLS
/// connections (libcurl multi on its own thread, via `HTTPClient`).
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
        /// Streams per connection curl runs at once; APNs allows up to 1000 (its SETTINGS decide).
        /// Default 1000.
        public var maxConcurrentStreams: Int
        /// Most connections to the host; requests beyond what they can multiplex wait in the client.
        /// Nil: no limit. Default 2. Without a limit, libcurl 7.88 opens a new connection for each
        /// request made before the server's SETTINGS raised the stream limit (100 until then) and
        /// later drops the extra connections with streams still on them: measured 59 connections
        /// opened and closed mid-send in one 100,000-push run, each costing retries (the
        /// `connection_broken` attempts: broken pipe, connection reset, HTTP/2 framing error).
        public var maxConnections: Int?
        /// Limit for one attempt (connect, send, answer). Default 10 s.
        public var requestTimeout: Duration
        /// Default 5 s.
        public var connectTimeout: Duration
        /// TCP_NODELAY on the connections (see `HTTPClient.Configuration.tcpNoDelay`). Default true.
        public var tcpNoDelay: Bool = true

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
    }

    public let configuration: Configuration
    public let tokenCache: APNsTokenCache
    let http: HTTPClient
    let logger: Logger

    public init(configuration: Configuration, tokenCache: APNsTokenCache, logger: Logger) throws {
        self.configuration = configuration
        self.tokenCache = tokenCache
        self.logger = logger
        http = try HTTPClient(
            configuration: HTTPClient.Configuration(
                httpVersion: .http2, maxConcurrentStreams: configuration.maxConcurrentStreams,
                maxConnectionsPerHost: configuration.maxConnections, caFile: configuration.caFile,
                requestTimeout: configuration.requestTimeout, connectTimeout: configuration.connectTimeout,
                tcpNoDelay: configuration.tcpNoDelay),
            logger: logger)
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
        let sent = request.headers(authorization: token.authorization)
        var redacted = request.headers(authorization: token.redactedAuthorization)
        // libcurl adds these two on the wire; the ledger shows what APNs actually received.
        redacted.add(name: "accept", value: "*/*")
        redacted.add(name: "content-length", value: String(request.payload.count))
        let httpRequest = HTTPClientRequest(
            method: .POST, url: configuration.baseURL + request.path, headers: sent,
            body: request.payload)
        let sentAt = Date()
        let start = ContinuousClock.now
        do {
            let response = try await http.execute(httpRequest)
            var result = Self.parse(response, latency: ContinuousClock.now - start)
            result.sentAt = sentAt
            result.requestHeaders = redacted
            result.payload = request.payload
            result.tokenIssuedAt = token.issuedAt
            return result
        } catch let error as HTTPClientError {
            logger.debug("apns request failed", metadata: ["error.code": error.code.rawValue])
            return APNsResponse(
                status: 0, sentAt: sentAt, latency: ContinuousClock.now - start, requestHeaders: redacted,
                payload: request.payload, transportError: error, tokenIssuedAt: token.issuedAt)
        } catch {
            // Task cancellation: report it as a non-retryable failure of this attempt.
            return APNsResponse(
                status: 0, sentAt: sentAt, latency: ContinuousClock.now - start, requestHeaders: redacted,
                payload: request.payload,
                transportError: HTTPClientError(code: .cancelled, message: "the send was cancelled"),
                tokenIssuedAt: token.issuedAt)
        }
    }

    /// How many TLS connections this client opened so far (stays small with HTTP/2 multiplexing).
    public var connectionsOpened: Int { http.connectionsOpened }

    /// Fails requests still in flight and stops the client's thread.
    public func shutdown() async { await http.shutdown() }

    /// Reads status, `apns-id`, `apns-unique-id` and the JSON body `{"reason", "timestamp"}`.
    static func parse(_ response: HTTPClientResponse, latency: Duration) -> APNsResponse {
        var result = APNsResponse(status: response.status, latency: latency)
        result.apnsId = response.headers["apns-id"]
        result.uniqueId = response.headers["apns-unique-id"]
        result.openedConnection = response.newConnections > 0
        if response.status != 200, !response.body.isEmpty, let body = try? JSONValue.parse(response.body) {
            if let reason = body["reason"]?.stringValue { result.reason = APNsReason(rawValue: reason) }
            if let ms = body["timestamp"]?.doubleValue { result.timestamp = Date(timeIntervalSince1970: ms / 1000) }
        }
        if response.status != 200, result.reason == nil {
            result.reason = Self.defaultReason(status: response.status)
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
