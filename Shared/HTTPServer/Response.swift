import BuzzKitCore
import BuzzKitWire

/// What a handler answers: a status, headers and a body.
///
/// JSON responses carry an `Envelope`; the server writes it when sending, so the envelope gets the
/// request's id in `metadata.requestId` without every handler passing it around. The server also
/// adds `X-Request-Id` to every response and `Content-Type: application/json; charset=utf-8` to
/// envelope responses.
public struct Response: Sendable {
    public enum Content: Sendable {
        case bytes([UInt8])
        case envelope(Envelope)
        /// A success envelope whose `data` is already-encoded JSON (a hot route that builds its
        /// answer from database text without parsing it into `JSONValue` and writing it again).
        /// The caller guarantees the bytes are one valid JSON value.
        case encodedData([UInt8])
    }

    public var status: Int
    public var headers: HTTPHeaders
    public var content: Content

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.content = .bytes(body)
    }

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), envelope: Envelope) {
        self.status = status
        self.headers = headers
        self.content = .envelope(envelope)
    }

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), content: Content) {
        self.status = status
        self.headers = headers
        self.content = content
    }

    /// Whether the body is a JSON envelope (the server adds the JSON `Content-Type`).
    public var isEnvelope: Bool {
        switch content {
        case .envelope, .encodedData: true
        case .bytes: false
        }
    }

    /// The body bytes as they go on the wire (an envelope gets `requestId`).
    public func bodyBytes(requestId: String) -> [UInt8] {
        switch content {
        case .bytes(let bytes): bytes
        case .envelope(let envelope): envelope.encoded(requestId: requestId)
        case .encodedData(let data): Envelope.encodedSuccess(encodedData: data, requestId: requestId)
        }
    }

    public static let jsonContentType = "application/json; charset=utf-8"
    public static let prometheusContentType = "text/plain; version=0.0.4"
}

// MARK: - Constructors

extension Response {
    /// A success envelope: `{"success":true,"data":...,"error":null,"metadata":{...,"requestId":...}}`.
    public static func json(
        _ data: JSONValue?, status: Int = 200, metadata: [String: JSONValue] = [:],
        headers: HTTPHeaders = HTTPHeaders()
    ) -> Response {
        Response(status: status, headers: headers, envelope: .success(data, metadata: metadata))
    }

    /// A success envelope around `data`, JSON that is already encoded (one valid JSON value).
    public static func json(encodedData data: [UInt8], status: Int = 200, headers: HTTPHeaders = HTTPHeaders())
        -> Response
    {
        Response(status: status, headers: headers, content: .encodedData(data))
    }

    /// An error envelope, with the status of the error's code (`not_found` -> 404, ...).
    public static func error(
        _ error: APIError, metadata: [String: JSONValue] = [:],
        headers: HTTPHeaders = HTTPHeaders()
    ) -> Response {
        let status = error.code.httpStatus >= 100 && error.code.httpStatus <= 599 ? error.code.httpStatus : 500
        return Response(status: status, headers: headers, envelope: .failure(error, metadata: metadata))
    }

    /// Plain text, `text/plain; charset=utf-8` unless another content type is given.
    public static func text(
        _ text: String, status: Int = 200,
        contentType: String = "text/plain; charset=utf-8"
    ) -> Response {
        Response(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
    }

    /// Prometheus text exposition format (`text/plain; version=0.0.4`), for `/metrics`.
    public static func prometheus(_ text: String) -> Response {
        .text(text, contentType: prometheusContentType)
    }
}
