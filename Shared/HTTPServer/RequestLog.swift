/// What the server reports to its observer after each response, for metrics and access logs.
///
/// `route` is the matched route's pattern (`/v1/subscribers/:id`), never the raw path, so metric
/// label cardinality stays bounded; unmatched requests report `"unmatched"`.
public struct RequestLog: Sendable {
    public var method: String
    public var route: String
    public var status: Int
    public var duration: Duration
    public var requestId: String

    public init(method: String, route: String, status: Int, duration: Duration, requestId: String) {
        self.method = method
        self.route = route
        self.status = status
        self.duration = duration
        self.requestId = requestId
    }

    public static let unmatchedRoute = "unmatched"
}
