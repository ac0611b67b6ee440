/// Reads the notification permission as the system has it now (`UNUserNotificationCenter`'s
/// settings on iOS, a fake in tests), so the SDK can notice a change and report
/// `$permission.changed`.
public protocol NotificationPermissionReader: Sendable {
    /// The current permission; nil when the platform cannot tell.
    func currentPermission() async -> NotificationPermission?
}

/// A reader that cannot tell (platforms without notifications): no `$permission.changed`.
public struct NoNotificationPermissionReader: NotificationPermissionReader {
    public init() {}
    public func currentPermission() async -> NotificationPermission? { nil }
}
