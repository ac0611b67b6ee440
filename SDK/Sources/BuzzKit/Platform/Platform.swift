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
    /// Silent pushes, opens, dismissals and the device token, reported by the platform itself
    /// (used only with `automaticPushHandling`).
    public var pushes: any PushNotificationSource
    /// The notification permission, read at launch and on every return to the foreground.
    public var permissions: any NotificationPermissionReader

    public init(
        clock: any BuzzKitClock = SystemClock(), transport: any Transport = URLSessionTransport(),
        lifecycle: any PlatformLifecycle = NoLifecycle(),
        notifications: any NotificationScheduler = NoNotificationScheduler(),
        opener: any DeepLinkOpener = NoDeepLinkOpener(),
        pushes: any PushNotificationSource = NoPushNotificationSource(),
        permissions: any NotificationPermissionReader = NoNotificationPermissionReader()
    ) {
        self.clock = clock
        self.transport = transport
        self.lifecycle = lifecycle
        self.notifications = notifications
        self.opener = opener
        self.pushes = pushes
        self.permissions = permissions
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
            platform.permissions = UserNotificationsPermissionReader()
        #endif
        #if canImport(UIKit) && canImport(UserNotifications) && os(iOS)
            platform.pushes = UserNotificationsPushSource()
        #endif
        return platform
    }
}
