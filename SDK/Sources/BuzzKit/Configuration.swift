import Foundation

/// How the SDK talks to BuzzKit and what it does on its own.
///
/// ```swift
/// BuzzKit.configure(Configuration(apiKey: "bk_ck_...", baseURL: URL(string: "https://api.example.com")!,
///                                  appGroup: "group.com.example.gym"))
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
    public var automaticSessionTracking: Bool
    /// Handles pushes without app code: on iOS the SDK becomes the `UNUserNotificationCenter`
    /// delegate (forwarding to the one set before `configure`), receives the app delegate's
    /// silent pushes and device token (its methods are forwarded to, then to the app's own), and
    /// registers for remote notifications. Default true; when false, forward silent pushes with
    /// `BuzzKit.didReceiveRemoteNotification(userInfo:)`, opens with
    /// `BuzzKit.notificationOpened(...)` and the token with `BuzzKit.registerDeviceToken(_:)`.
    public var automaticPushHandling: Bool
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
    public var flushDelayAfterTrack: TimeInterval
    /// Seconds after `configure` before the queue flushes. Default 5.
    public var flushDelayAfterConfigure: TimeInterval
    /// Events per batch. Default 100 (the API's limit, `EventBatch.maxEvents`).
    public var batchSize: Int
    /// Failed network attempts after which an event is given up. Default 20.
    public var maxAttempts: Int
    /// A return to the foreground within this many seconds resumes the session. Default 30.
    public var sessionResumeWindow: TimeInterval
    /// Seconds between two records of "still in the foreground" while a session runs, so a
    /// session whose process is killed in the foreground is closed at about that moment on the
    /// next launch. Default 10.
    public var sessionHeartbeatInterval: TimeInterval
    /// Delay before retrying a flush that failed for lack of a network (or a 5xx/408/429): doubled
    /// per consecutive failure, capped at `retryMaxDelay`, jittered into `[d/2, d]`. Default 5.
    public var retryBaseDelay: TimeInterval
    /// The longest delay between two retries of a failed flush. Default 300 (5 minutes).
    public var retryMaxDelay: TimeInterval

    /// Every setting is a labelled argument with its documented default, so a configuration
    /// is one expression: `Configuration(apiKey: key, baseURL: url, automaticSessionTracking: false)`.
    public init(
        apiKey: String,
        baseURL: URL,
        appGroup: String? = nil,
        automaticSessionTracking: Bool = true,
        automaticPushHandling: Bool = true,
        pushEnvironment: PushEnvironment? = nil,
        storageDirectory: URL? = nil,
        appVersion: String = BuzzKitConfiguration.mainBundleVersion,
        appBuild: String = BuzzKitConfiguration.mainBundleBuild,
        bundleId: String? = Bundle.main.bundleIdentifier,
        logHandler: LogHandler? = BuzzKitConfiguration.defaultLogHandler,
        flushDelayAfterTrack: TimeInterval = 3,
        flushDelayAfterConfigure: TimeInterval = 5,
        batchSize: Int = 100,
        maxAttempts: Int = 20,
        sessionResumeWindow: TimeInterval = 30,
        sessionHeartbeatInterval: TimeInterval = 10,
        retryBaseDelay: TimeInterval = 5,
        retryMaxDelay: TimeInterval = 300
    ) {
        self.apiKey = apiKey
        self.baseURL = baseURL
        self.appGroup = appGroup
        self.automaticSessionTracking = automaticSessionTracking
        self.automaticPushHandling = automaticPushHandling
        self.pushEnvironment = pushEnvironment
        self.storageDirectory = storageDirectory
        self.appVersion = appVersion
        self.appBuild = appBuild
        self.bundleId = bundleId
        self.logHandler = logHandler
        self.flushDelayAfterTrack = flushDelayAfterTrack
        self.flushDelayAfterConfigure = flushDelayAfterConfigure
        self.batchSize = batchSize
        self.maxAttempts = maxAttempts
        self.sessionResumeWindow = sessionResumeWindow
        self.sessionHeartbeatInterval = sessionHeartbeatInterval
        self.retryBaseDelay = retryBaseDelay
        self.retryMaxDelay = retryMaxDelay
    }

    /// The main bundle's `CFBundleShortVersionString`, "0" when absent (the default `appVersion`).
    public static var mainBundleVersion: String {
        Bundle.main.infoDictionary?["CFBundleShortVersionString"] as? String ?? "0"
    }
    /// The main bundle's `CFBundleVersion`, "0" when absent (the default `appBuild`).
    public static var mainBundleBuild: String {
        Bundle.main.infoDictionary?["CFBundleVersion"] as? String ?? "0"
    }
    /// The unified log on Apple platforms, nothing on Linux (the default `logHandler`).
    public static var defaultLogHandler: LogHandler? { SDKLogger.defaultHandler() }
}

/// The seeds write `Configuration(...)`, `Configuration.pushEnvironment`: the SDK's configuration
/// under its short name once `BuzzKit` is imported (`BuzzKit.Configuration` and
/// `BuzzKitConfiguration` name the same type).
public typealias Configuration = BuzzKitConfiguration

/// The APNs environment a token belongs to.
public enum PushEnvironment: String, Sendable, Hashable {
    case sandbox
    case production

    /// The environment of this build: the provisioning profile's `aps-environment` when there is
    /// one (`development` is sandbox), else sandbox for debug builds and production otherwise.
    public static var detected: PushEnvironment {
        if let path = Bundle.main.path(forResource: "embedded", ofType: "mobileprovision"),
            let data = FileManager.default.contents(atPath: path)
        {
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
