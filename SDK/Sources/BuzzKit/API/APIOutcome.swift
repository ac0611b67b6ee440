import BuzzKitWire

/// What became of one API call, in the terms the queue's rules need.
enum APIOutcome: Sendable {
    /// 2xx: the server acknowledged it (the envelope's `data`).
    case accepted(JSONValue?)
    /// An API error the request will never get past (4xx other than 408/429): drop it.
    case rejected(status: Int, error: APIError?)
    /// No answer, or an answer that says "later" (5xx, 408, 429): keep it and count an attempt.
    case retryLater(reason: String)

    static func from(_ response: TransportResponse) -> APIOutcome {
        let envelope = try? Envelope.decode(response.body)
        switch response.status {
        case 200..<300: return .accepted(envelope?.data)
        case 408, 429, 500...: return .retryLater(reason: "status \(response.status)")
        default: return .rejected(status: response.status, error: envelope?.error)
        }
    }
}
