#if canImport(UserNotifications)
    @preconcurrency import UserNotifications

    /// The permission from `UNUserNotificationCenter.notificationSettings()`.
    public struct UserNotificationsPermissionReader: NotificationPermissionReader {
        public init() {}

        public func currentPermission() async -> NotificationPermission? {
            switch await UNUserNotificationCenter.current().notificationSettings().authorizationStatus {
            case .notDetermined: return .unknown
            case .denied: return .denied
            case .authorized: return .authorized
            case .provisional: return .provisional
            #if os(iOS)
                case .ephemeral: return .ephemeral
            #endif
            @unknown default: return .unknown
            }
        }
    }
#endif
