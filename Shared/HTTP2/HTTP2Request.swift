import BuzzKitCore

/// One request: the method and path, then its header fields in three parts, then the body.
///
/// `:scheme` and `:authority` come from the client's origin. The fields go out in this order:
/// `headers` (shared by many requests, indexed in HPACK unless marked otherwise), then
/// `uniqueField` and `uniqueHeaders` (this request's own values, never indexed: they would only
/// churn the connection's dynamic table), then `trailingHeaders` (shared again, indexed). Names
/// must be lower-case. The path is sent never-indexed too.
public struct HTTP2Request: Sendable {
    public var method: Method
    /// The path with its query, e.g. `/3/device/<token>`.
    public var path: String
    public var headers: HTTP2HeaderBlock
    /// One field of the request's own that needs no list of its own (APNs: each push's
    /// `apns-id`; a list per request was one allocation more per push).
    public var uniqueField: HTTPHeaders.Field?
    public var uniqueHeaders: HTTPHeaders
    public var trailingHeaders: HTTP2HeaderBlock
    public var body: [UInt8]

    /// The methods this client sends.
    public enum Method: String, Sendable {
        case GET, POST, PUT, DELETE
    }

    public init(
        method: Method = .POST, path: String, headers: HTTP2HeaderBlock = .empty, uniqueField: HTTPHeaders.Field? = nil,
        uniqueHeaders: HTTPHeaders = HTTPHeaders(), trailingHeaders: HTTP2HeaderBlock = .empty, body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.uniqueField = uniqueField
        self.uniqueHeaders = uniqueHeaders
        self.trailingHeaders = trailingHeaders
        self.body = body
    }
}

/// A response: status, header fields (`:status` excluded, names lower-case) and body.
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// True when the request went out on a connection opened for it (its first stream).
    public var openedConnection: Bool

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], openedConnection: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.openedConnection = openedConnection
    }
}

/// One request's end in a batch: the response or the error, and when it ended.
public struct HTTP2Result: Sendable {
    public var result: Result<HTTP2Response, HTTP2Error>
    /// When the answer (or the error) arrived, by the event loop's clock.
    public var finishedAt: ContinuousClock.Instant

    public init(result: Result<HTTP2Response, HTTP2Error>, finishedAt: ContinuousClock.Instant) {
        self.result = result
        self.finishedAt = finishedAt
    }
}
