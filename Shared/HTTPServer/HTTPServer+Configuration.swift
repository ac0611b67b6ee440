extension HTTPServer {
    /// How the server listens and what it accepts. Every knob has a default suited to the gateway.
    public struct Configuration: Sendable {
        /// The IPv4 address to bind. Default `127.0.0.1`; `0.0.0.0` listens on every interface.
        public var host: String
        /// The TCP port. Default 0: the kernel picks a free port, read it from `HTTPServer.port`.
        public var port: Int
        /// Network threads: one libmicrohttpd daemon each (epoll), new connections dealt to them
        /// in turn by the accept thread. Default 2. These threads parse requests and write
        /// responses; async handlers run on the Swift pool.
        public var workerThreads: Int
        /// The largest accepted request body. Default 1 MiB. Larger bodies are answered
        /// `413 payload_too_large`: at once when `Content-Length` says so (the connection is then
        /// closed), otherwise after the body has been read and discarded.
        public var maxBodyBytes: Int
        /// A connection with no traffic for this long is closed (keep-alive idle time, slow
        /// clients). Default 30 s; rounded up to whole seconds. Requests waiting on a handler are
        /// not affected.
        public var connectionIdleTimeout: Duration
        /// When set, an async handler that has not answered within this time gets a
        /// `504 upstream_timeout` response (the handler task is cancelled). Default nil: no limit.
        public var handlerDeadline: Duration?
        /// How long `shutdown()` waits for in-flight requests before answering them
        /// `503 not_ready` and stopping. Default 10 s.
        public var shutdownGracePeriod: Duration

        public init(
            host: String = "127.0.0.1", port: Int = 0, workerThreads: Int = 2,
            maxBodyBytes: Int = 1 << 20, connectionIdleTimeout: Duration = .seconds(30),
            handlerDeadline: Duration? = nil, shutdownGracePeriod: Duration = .seconds(10)
        ) {
            self.host = host
            self.port = port
            self.workerThreads = workerThreads
            self.maxBodyBytes = maxBodyBytes
            self.connectionIdleTimeout = connectionIdleTimeout
            self.handlerDeadline = handlerDeadline
            self.shutdownGracePeriod = shutdownGracePeriod
        }
    }
}
