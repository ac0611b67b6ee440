import BuzzKitCore

/// What came back for one request: any status counts as a response (a 500 is not an error here).
public struct HTTPClientResponse: Sendable {
    public var status: Int
    /// The header fields of the final response (those of a `100 Continue` are dropped).
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The version actually negotiated (for example `.http2` after ALPN picked h2).
    public var httpVersion: HTTPVersion
    /// Time from the start of the transfer to its end, as curl measured it (CURLINFO_TOTAL_TIME_T).
    public var totalTime: Duration
    /// How many new connections this request had to open (CURLINFO_NUM_CONNECTS): 0 when it
    /// reused (or multiplexed onto) an existing connection.
    public var newConnections: Int

    public init(
        status: Int, headers: HTTPHeaders = [:], body: [UInt8] = [], httpVersion: HTTPVersion = .unknown,
        totalTime: Duration = .zero, newConnections: Int = 0
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
        self.totalTime = totalTime
        self.newConnections = newConnections
    }
}
