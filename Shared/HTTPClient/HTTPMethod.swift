/// An HTTP request method. The common ones are constants; any other token can be built with
/// `HTTPMethod(rawValue:)` and is sent as a custom request method.
public struct HTTPMethod: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let GET = HTTPMethod(rawValue: "GET")
    public static let POST = HTTPMethod(rawValue: "POST")
    public static let PUT = HTTPMethod(rawValue: "PUT")
    public static let PATCH = HTTPMethod(rawValue: "PATCH")
    public static let DELETE = HTTPMethod(rawValue: "DELETE")
    public static let HEAD = HTTPMethod(rawValue: "HEAD")

    public var description: String { rawValue }
}
