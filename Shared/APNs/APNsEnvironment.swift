/// Which APNs service a device token belongs to: apps signed for development get `sandbox`
/// tokens, App Store and TestFlight builds `production` tokens. A token only works on its own.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    case sandbox
    case production

    /// Apple's base URL for this environment.
    public var defaultBaseURL: String {
        switch self {
        case .sandbox: "https://api.sandbox.push.apple.com"
        case .production: "https://api.push.apple.com"
        }
    }
}
