import Foundation

/// Where a Live Activity is in its life, as ActivityKit reports it.
public enum ActivityLifecycleState: String, Sendable, Hashable {
    case active, ended, dismissed, stale
}

/// One thing that happened to the activities of an attributes type, in a platform-neutral form.
///
/// The ActivityKit adapter turns `Activity.activities`, `activityUpdates`, `pushTokenUpdates`,
/// `activityStateUpdates` and `pushToStartTokenUpdates` into these; tests feed them directly.
public enum ActivityUpdate: Sendable, Hashable {
    /// An activity exists (found at launch or started later, by anyone).
    case activity(id: String, attributesType: String)
    /// An activity's push token, first or rotated.
    case pushToken(id: String, attributesType: String, token: Data)
    case state(id: String, attributesType: String, ActivityLifecycleState)
    /// The push-to-start token of an attributes type (iOS 17.2 and later).
    case pushToStartToken(attributesType: String, token: Data)
}

/// A source of `ActivityUpdate`s for one attributes type (ActivityKit on iOS, fakes in tests).
/// The stream ends when the source has nothing more to report.
public protocol ActivityProvider: Sendable {
    var attributesType: String { get }
    func updates() -> AsyncStream<ActivityUpdate>
}

/// Why a Live Activity registration call failed.
public struct ActivityRegistrationError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The server answered 404 `not_found` for the route: it has no Live Activity support yet.
        public static let serverLacksLiveActivities = Code(rawValue: "server_lacks_live_activities")
        /// The API refused the call (another 4xx).
        public static let rejected = Code(rawValue: "rejected")
        /// No answer, or a 5xx: try again later.
        public static let unavailable = Code(rawValue: "unavailable")
        /// The SDK instance behind `BuzzKit.activities` is gone or was never configured.
        public static let notConfigured = Code(rawValue: "not_configured")
    }

    public var code: Code
    public var status: Int?
    public var message: String

    public init(code: Code, status: Int? = nil, message: String) {
        self.code = code
        self.status = status
        self.message = message
    }

    public var description: String { "\(code.rawValue)\(status.map { " (\($0))" } ?? ""): \(message)" }
}
