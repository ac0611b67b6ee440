/// Everything platform-specific the SDK talks to, in one value.
///
/// `Platform.current` is the real set (UIKit, UserNotifications, URLSession on iOS; URLSession
/// and no-ops on Linux); tests build one from fakes.
public struct Platform: Sendable {
    public var clock: any BuzzKitClock
    public var transport: any Transport
    public var lifecycle: any PlatformLifecycle
    public var notifications: any NotificationScheduler
    public var opener: any DeepLinkOpener

    public init(clock: any BuzzKitClock = SystemClock(), transport: any Transport = URLSessionTransport(),
                lifecycle: any PlatformLifecycle = NoLifecycle(),
                notifications: any NotificationScheduler = NoNotificationScheduler(),
                opener: any DeepLinkOpener = NoDeepLinkOpener()) {
        self.clock = clock
        self.transport = transport
        self.lifecycle = lifecycle
        self.notifications = notifications
        self.opener = opener
    }

    /// The platform's real adapters.
    public static var current: Platform {
        var platform = Platform()
        #if canImport(UIKit) && !os(watchOS)
        platform.lifecycle = UIKitLifecycle()
        platform.opener = UIApplicationOpener()
        #endif
        #if canImport(UserNotifications)
        platform.notifications = UserNotificationsScheduler()
        #endif
        return platform
    }
}
