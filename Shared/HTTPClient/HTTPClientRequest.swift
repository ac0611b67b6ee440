import BuzzKitCore

/// One request for `HTTPClient.execute(_:)`.
///
/// The body is sent as is (curl copies it when the request starts, so the array may be reused at
/// once). When the body is not empty and no `content-type` header is set, none is sent (curl's own
/// default, `application/x-www-form-urlencoded`, is suppressed). `Expect: 100-continue` is never
/// sent unless set here.
public struct HTTPClientRequest: Sendable {
    public var method: HTTPMethod
    /// An absolute `http://` or `https://` URL.
    public var url: String
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Limit for the whole exchange (connect, send, wait, receive). Nil: the client's
    /// `Configuration.requestTimeout`.
    public var timeout: Duration?
    /// Addresses to connect to instead of resolving the URL's host (CURLOPT_RESOLVE entries,
    /// `host:port:address[,address]`, an IPv6 address in brackets): a caller that checked where a
    /// name resolves (the webhooks service refusing private addresses) pins the connection to what
    /// it checked, so a DNS answer that changes in between cannot redirect it. Empty: curl resolves.
    public var resolve: [String]
    /// Keep at most this many bytes of the response body (the rest is read and dropped, so a
    /// large answer costs no memory). Nil: keep it all.
    public var maxResponseBodyBytes: Int?

    public init(
        method: HTTPMethod = .GET, url: String, headers: HTTPHeaders = [:], body: [UInt8] = [],
        timeout: Duration? = nil, resolve: [String] = [], maxResponseBodyBytes: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.resolve = resolve
        self.maxResponseBodyBytes = maxResponseBodyBytes
    }
}
