extension HTTP2Client {
    /// How a client talks to its origin. Every knob has a default suited to APNs.
    public struct Configuration: Sendable {
        /// A PEM file of CA certificates to trust instead of the system store (the simulator's
        /// `ca.pem`). Default nil.
        public var caFile: String?
        /// Most connections to the origin at once (a draining connection, after a GOAWAY, is not
        /// counted). A further connection opens only when every open one has no free stream.
        /// Default 2.
        public var maxConnections: Int
        /// Most streams this client runs at once on one connection; the server's
        /// SETTINGS_MAX_CONCURRENT_STREAMS lowers it (APNs: up to 1000). Default 1000.
        public var maxConcurrentStreams: Int
        /// Backpressure: most requests admitted and not yet answered (in flight or queued for a
        /// stream). Callers beyond it wait. Default 2000 (two connections of 1000 streams).
        public var maxOutstandingRequests: Int
        /// Limit for one request from its admission (queueing for a stream included) to its
        /// answer. Default 10 s.
        public var requestTimeout: Duration
        /// Limit for resolving, connecting and the TLS handshake. Default 5 s.
        public var connectTimeout: Duration
        /// TCP_NODELAY. Default true: the loop already writes whole batches of frames at once.
        public var tcpNoDelay: Bool
        /// Largest response body kept; the rest is dropped. Default 64 KiB (APNs answers with a few
        /// dozen bytes).
        public var maxResponseBody: Int

        public init(
            caFile: String? = nil, maxConnections: Int = 2, maxConcurrentStreams: Int = 1000,
            maxOutstandingRequests: Int = 2000, requestTimeout: Duration = .seconds(10),
            connectTimeout: Duration = .seconds(5), tcpNoDelay: Bool = true, maxResponseBody: Int = 64 * 1024
        ) {
            self.caFile = caFile
            self.maxConnections = max(1, maxConnections)
            self.maxConcurrentStreams = max(1, maxConcurrentStreams)
            self.maxOutstandingRequests = max(1, maxOutstandingRequests)
            self.requestTimeout = requestTimeout
            self.connectTimeout = connectTimeout
            self.tcpNoDelay = tcpNoDelay
            self.maxResponseBody = max(0, maxResponseBody)
        }
    }
}
