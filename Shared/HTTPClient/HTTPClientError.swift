/// Why a request produced no response.
///
/// `code` is stable and safe to switch on (and to count in metrics); `message` is curl's own text
/// (CURLOPT_ERRORBUFFER or `curl_easy_strerror`) for logs, and `curlCode` the raw CURLcode (0 when
/// the error did not come from curl). Retrying is the caller's decision: `isRetryable` says whether
/// trying again may succeed. Note that after `.timeout` or `.connectionBroken` the server may
/// already have acted on the request.
public struct HTTPClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, extensible error category.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) { self.rawValue = rawValue }

        /// The request (or its connect phase) ran past its time limit.
        public static let timeout = Code(rawValue: "timeout")
        /// No connection: refused, unreachable, or the name did not resolve.
        public static let connectFailed = Code(rawValue: "connect_failed")
        /// The TLS handshake or certificate verification failed (a configuration problem, usually).
        public static let tlsFailed = Code(rawValue: "tls_failed")
        /// The connection broke mid-exchange: send/receive error, HTTP/2 stream or session error,
        /// empty or truncated reply.
        public static let connectionBroken = Code(rawValue: "connection_broken")
        /// The transfer was aborted by the client itself (not by task cancellation, which throws
        /// `CancellationError`).
        public static let cancelled = Code(rawValue: "cancelled")
        /// The client was shut down before the request finished.
        public static let shutdown = Code(rawValue: "shutdown")
        /// The request could not be built: bad URL, unsupported scheme, bad option.
        public static let invalidRequest = Code(rawValue: "invalid_request")
        /// Anything else curl reported.
        public static let other = Code(rawValue: "other")

        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String
    public var curlCode: Int

    public init(code: Code, message: String, curlCode: Int = 0) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
    }

    /// True for failures that a later attempt may not hit: timeouts, failed connects, broken
    /// connections. False for TLS failures, invalid requests, cancellation and shutdown.
    public var isRetryable: Bool {
        code == .timeout || code == .connectFailed || code == .connectionBroken
    }

    public var description: String {
        curlCode == 0
            ? "HTTPClientError(\(code)): \(message)" : "HTTPClientError(\(code), curl \(curlCode)): \(message)"
    }

    static func shutdown() -> HTTPClientError {
        HTTPClientError(code: .shutdown, message: "the HTTP client was shut down")
    }
}
