/// The HTTP version a response actually came over (what was negotiated, not what was asked for).
public enum HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    case http1_0
    case http1_1
    case http2
    case http3
    /// curl reported a version this module does not know (or none, for a failed transfer).
    case unknown

    public var description: String {
        switch self {
        case .http1_0: "HTTP/1.0"
        case .http1_1: "HTTP/1.1"
        case .http2: "HTTP/2"
        case .http3: "HTTP/3"
        case .unknown: "unknown"
        }
    }
}
