import BuzzKitCore
import BuzzKitWire

/// One HTTP request as a handler sees it: fully received (body included), immutable, `Sendable`.
///
/// `path` is the raw path as sent (escapes kept); `pathParameters` and `query` are percent-decoded.
/// `requestId` is the client's `X-Request-Id` when it is a valid id (1-128 characters of
/// `A-Z a-z 0-9 . _ : -`), otherwise a fresh random id; it is echoed in the `X-Request-Id` response
/// header and in the envelope's `metadata.requestId`.
public struct Request: Sendable {
    public var method: String
    public var path: String
    /// The query string after `?`, as sent; empty when there is none.
    public var rawQuery: String
    /// Decoded query parameters (`+` is a space); for a repeated name the last value wins, see
    /// `queryItems` for all of them.
    public var query: [String: String]
    public var queryItems: [(name: String, value: String)]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Values of the `:name` segments of the matched route pattern, percent-decoded.
    public var pathParameters: [String: String]
    public var requestId: String
    /// The client's IP address, when known.
    public var remoteAddress: String?
    /// The pattern of the matched route (`/v1/subscribers/:id`), empty before routing.
    public var routePattern: String

    public init(
        method: String, path: String, rawQuery: String = "", headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [], pathParameters: [String: String] = [:], requestId: String? = nil,
        remoteAddress: String? = nil, routePattern: String = ""
    ) {
        self.method = method
        self.path = path
        self.rawQuery = rawQuery
        self.queryItems = QueryString.parse(rawQuery)
        var query: [String: String] = [:]
        for item in queryItems { query[item.name] = item.value }
        self.query = query
        self.headers = headers
        self.body = body
        self.pathParameters = pathParameters
        self.requestId = requestId ?? RequestID.accepting(headers["X-Request-Id"])
        self.remoteAddress = remoteAddress
        self.routePattern = routePattern
    }
}

// MARK: - JSON body

extension Request {
    /// The body parsed as JSON. Throws `invalid_json` (400) with the parser's message when it is
    /// not JSON, and also when the body is empty (use `jsonBodyIfPresent()` where a body is optional).
    public func jsonBody() throws(APIError) -> JSONValue {
        guard let value = try jsonBodyIfPresent() else {
            throw APIError.invalidJSON("the request body is empty")
        }
        return value
    }

    /// The body parsed as JSON, or nil when the body is empty or only whitespace.
    public func jsonBodyIfPresent() throws(APIError) -> JSONValue? {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return nil }
        do {
            return try JSONValue.parse(body)
        } catch {
            throw APIError.invalidJSON(error.description)
        }
    }
}
