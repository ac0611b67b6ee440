#if canImport(UIKit) && canImport(UserNotifications) && os(iOS)
    import Foundation
    import UIKit

    /// The iOS push source behind `automaticPushHandling`: the `UNUserNotificationCenter` delegate
    /// (opens, dismissals), the app delegate's remote-notification methods (silent pushes, the device
    /// token) and `registerForRemoteNotifications()` (which needs no permission). Installed on the
    /// main thread: at once when `configure` runs there (as it should, in
    /// `application(_:didFinishLaunchingWithOptions:)`), else on the next turn of the main queue.
    public struct UserNotificationsPushSource: PushNotificationSource {
        public init() {}

        public func start(_ handler: @escaping @Sendable (PlatformNotificationEvent) async -> RemoteNotificationOutcome)
        {
            let install: @MainActor @Sendable () -> Void = {
                NotificationCenterForwarder.install(handler)
                AppDelegateForwarding.install(handler)
                UIApplication.shared.registerForRemoteNotifications()
            }
            if Thread.isMainThread {
                MainActor.assumeIsolated { install() }
            } else {
                Task { @MainActor in install() }
            }
        }
    }
#endif
