extension HTTPClient {
    /// How the client talks HTTP. Every knob has a default suited to an APNs-like workload:
    /// HTTP/2 over TLS, many streams multiplexed on few connections.
    public struct Configuration: Sendable {
        /// Which HTTP version to ask for.
        public enum HTTPVersionPreference: Sendable, Hashable {
            /// HTTP/1.1 only: one request at a time per connection (kept alive and reused).
            case http1_1
            /// HTTP/2 over TLS (ALPN h2) with multiplexing; `http://` URLs use HTTP/1.1.
            /// Requests wait for an existing connection to multiplex onto rather than open new
            /// ones (CURLOPT_PIPEWAIT).
            case http2
            /// HTTP/2 without TLS and without upgrade (h2c "prior knowledge"), for `http://` test
            /// servers that speak only HTTP/2.
            case http2PriorKnowledge
        }

        /// Default `.http2`.
        public var httpVersion: HTTPVersionPreference
        /// Most HTTP/2 streams curl runs at once on one connection (CURLMOPT_MAX_CONCURRENT_STREAMS);
        /// the server's own SETTINGS limit still applies (APNs: 1000 once warmed up). Default 100.
        public var maxConcurrentStreams: Int
        /// Most connections to one host (CURLMOPT_MAX_HOST_CONNECTIONS); further requests queue
        /// inside the client until a connection (or an HTTP/2 stream) is free. Nil: no limit.
        /// Default 4. Keep a limit with HTTP/2: without one, libcurl 7.88 opens a new connection
        /// for each request beyond the server's stream limit and keeps churning them (measured:
        /// 400 requests in flight against a 100-stream server opened 301 connections for 20,000
        /// requests; with a limit of 1 or 2, it opened 1 or 2). With HTTP/1.1 this is the
        /// concurrency per host.
        public var maxConnectionsPerHost: Int?
        /// A PEM file of CA certificates to trust instead of the system store (CURLOPT_CAINFO),
        /// for servers with a self-signed certificate. Default nil (system store).
        public var caFile: String?
        /// Limit for a whole request when `HTTPClientRequest.timeout` is nil. Default 30 s.
        public var requestTimeout: Duration
        /// Limit for opening a connection, TLS handshake included. Default 10 s.
        public var connectTimeout: Duration
        /// Most idle easy handles kept for reuse (each costs a few kB). Default 1024.
        public var maxPooledHandles: Int
        /// TCP_NODELAY on new connections. Default true (curl's default). False lets the kernel
        /// coalesce small writes: libcurl 7.88 writes every HTTP/2 frame as its own TLS record and
        /// send(2), so many small requests in flight become many tiny packets.
        public var tcpNoDelay: Bool = true
        /// Whether the `http_proxy`/`https_proxy` environment variables apply (curl's default).
        /// False: every request goes straight to its host (the webhooks service, whose address
        /// checks would mean nothing through a proxy). Default true.
        public var useEnvironmentProxy: Bool = true

        public init(
            httpVersion: HTTPVersionPreference = .http2,
            maxConcurrentStreams: Int = 100,
            maxConnectionsPerHost: Int? = 4,
            caFile: String? = nil,
            requestTimeout: Duration = .seconds(30),
            connectTimeout: Duration = .seconds(10),
            maxPooledHandles: Int = 1024,
            tcpNoDelay: Bool = true
        ) {
            self.httpVersion = httpVersion
            self.maxConcurrentStreams = maxConcurrentStreams
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.caFile = caFile
            self.requestTimeout = requestTimeout
            self.connectTimeout = connectTimeout
            self.maxPooledHandles = maxPooledHandles
            self.tcpNoDelay = tcpNoDelay
        }
    }
}

extension Duration {
    /// Whole milliseconds, at least 1 (curl reads 0 as "no limit"; a zero timeout expires at once).
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        let ms = seconds.multipliedReportingOverflow(by: 1000)
        guard !ms.overflow else { return Int.max }
        let total = Int(ms.partialValue) + Int(attoseconds / 1_000_000_000_000_000)
        if total <= 0 { return 1 }
        return total
    }
}
