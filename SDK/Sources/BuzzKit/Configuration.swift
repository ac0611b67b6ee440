import Foundation

/// How the SDK talks to BuzzKit and what it does on its own.
///
/// ```swift
/// var configuration = BuzzKit.Configuration(apiKey: "bk_ck_...", baseURL: URL(string: "https://api.example.com")!)
/// configuration.appGroup = "group.com.example.gym"
/// BuzzKit.configure(configuration)
/// ```
public struct BuzzKitConfiguration: Sendable {
    /// A client key (`bk_ck_...`): it may only write events, register devices and tokens.
    public var apiKey: String
    /// The API's base URL (without `/v1`).
    public var baseURL: URL
    /// The app group shared with the notification service extension. When set, the event queue
    /// lives in the group's container and the extension's delivered receipts reach the app
    /// through it. Default nil.
    public var appGroup: String?
    /// Sessions from the app lifecycle (`$app.opened`, `$app.backgrounded`, `$session.ended`).
    /// Default true; false emits none of the three.
    public var automaticSessionTracking: Bool = true
    /// Handles pushes without app code: on iOS the SDK becomes the `UNUserNotificationCenter`
    /// delegate (forwarding to the one set before `configure`), receives the app delegate's
    /// silent pushes and device token (its methods are forwarded to, then to the app's own), and
    /// registers for remote notifications. Default true; when false, forward silent pushes with
    /// `BuzzKit.didReceiveRemoteNotification(userInfo:)`, opens with
    /// `BuzzKit.notificationOpened(...)` and the token with `BuzzKit.registerDeviceToken(_:)`.
    public var automaticPushHandling: Bool = true
    /// The APNs environment of device and activity tokens. Default nil: detected from the build.
    public var pushEnvironment: PushEnvironment?
    /// Where the queue database lives when there is no app group (and on Linux, in tests).
    /// Default nil: Application Support/BuzzKit.
    public var storageDirectory: URL?
    /// The app's version and build, for `$app.installed` / `$app.updated`. Default: the main
    /// bundle's `CFBundleShortVersionString` / `CFBundleVersion` ("0" / "0" when absent).
    public var appVersion: String
    public var appBuild: String
    /// The bundle id sent with device and activity tokens. Default: the main bundle's.
    public var bundleId: String?
    /// Where log lines go. Default: the unified log on Apple platforms, nowhere on Linux.
    public var logHandler: LogHandler?

    // MARK: - Queue and session knobs (documented defaults; tests may shorten none of them)

    /// Seconds after a track before the queue flushes. Default 3.
    public var flushDelayAfterTrack: TimeInterval = 3
    /// Seconds after `configure` before the queue flushes. Default 5.
    public var flushDelayAfterConfigure: TimeInterval = 5
    /// Events per batch. Default 100 (the API's limit, `EventBatch.maxEvents`).
    public var batchSize: Int = 100
    /// Failed network attempts after which an event is given up. Default 20.
    public var maxAttempts: Int = 20
    /// A return to the foreground within this many seconds resumes the session. Default 30.
    public var sessionResumeWindow: TimeInterval = 30
    /// Seconds between two records of "still in the foreground" while a session runs, so a
    /// session whose process is killed in the foreground is closed at about that moment on the
    /// next launch. Default 10.
    public var sessionHeartbeatInterval: TimeInterval = 10
    /// Delay before retrying a flush that failed for lack of a network (or a 5xx/408/429): doubled
    /// per consecutive failure, capped at `retryMaxDelay`, jittered into `[d/2, d]`. Default 5.
    public var retryBaseDelay: TimeInterval = 5
    /// The longest delay between two retries of a failed flush. Default 300 (5 minutes).
    public var retryMaxDelay: TimeInterval = 300

    public init(apiKey: String, baseURL: URL) {
        self.apiKey = apiKey
        self.baseURL = baseURL
        let info = Bundle.main.infoDictionary ?? [:]
        appVersion = info["CFBundleShortVersionString"] as? String ?? "0"
        appBuild = info["CFBundleVersion"] as? String ?? "0"
        bundleId = Bundle.main.bundleIdentifier
        logHandler = SDKLogger.defaultHandler()
    }
}

/// The APNs environment a token belongs to.
public enum PushEnvironment: String, Sendable, Hashable {
    case sandbox
    case production

    /// The environment of this build: the provisioning profile's `aps-environment` when there is
    /// one (`development` is sandbox), else sandbox for debug builds and production otherwise.
    public static var detected: PushEnvironment {
        if let path = Bundle.main.path(forResource: "embedded", ofType: "mobileprovision"),
           let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self)
            if let range = text.range(of: "<key>aps-environment</key>") {
                let rest = text[range.upperBound...].prefix(80)
                if rest.contains("development") { return .sandbox }
                if rest.contains("production") { return .production }
            }
        }
        #if DEBUG
        return .sandbox
        #else
        return .production
        #endif
    }
}
