/// Why a request got no response from the HTTP/2 client.
///
/// The codes match `HTTPClientError`'s (same raw values), so a caller that records either can
/// map one onto the other without a table. After `.timeout` or `.connectionBroken` the server
/// may have acted on the request: it was written to a connection that then failed. A request
/// the server provably never processed (its stream above a GOAWAY's last stream id, refused, or
/// never written) is sent again on another connection by the client itself and never ends in an
/// error of its own.
public struct HTTP2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, extensible category.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No answer within the request's time limit (queueing included), or no connection
        /// within the connect limit.
        public static let timeout = Code(rawValue: "timeout")
        /// The name did not resolve, or the TCP connection was refused or unreachable.
        public static let connectFailed = Code(rawValue: "connect_failed")
        /// The TLS handshake failed: certificate not trusted or not for this host, or the server
        /// did not agree to HTTP/2 (ALPN `h2`). A configuration problem: retrying will not help.
        public static let tlsFailed = Code(rawValue: "tls_failed")
        /// The connection broke, or the server reset the stream, after the request was written.
        public static let connectionBroken = Code(rawValue: "connection_broken")
        /// The client was shut down before the request ended.
        public static let shutdown = Code(rawValue: "shutdown")
        /// The request could not be submitted (nghttp2 refused its headers).
        public static let invalidRequest = Code(rawValue: "invalid_request")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// True for failures a later attempt may not hit: timeouts, failed connects, broken connections.
    public var isRetryable: Bool { code == .timeout || code == .connectFailed || code == .connectionBroken }

    public var description: String { "HTTP2Error(\(code)): \(message)" }
}
