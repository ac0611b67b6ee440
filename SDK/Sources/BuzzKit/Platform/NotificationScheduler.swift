import BuzzKitWire

/// A local notification to schedule at wall-clock date components (in the device's timezone
/// at the moment it fires), as `UNCalendarNotificationTrigger` does.
public struct LocalNotificationRequest: Sendable, Hashable {
    /// The notification identifier (a local plan's id).
    public var id: String
    public var fireAt: LocalPlan.FireDate
    public var title: String?
    public var body: String?
    /// The payload the notification carries (`userInfo`): a BuzzKit payload with the originating
    /// message id, deep link and data, so an open is routed and tracked like a push.
    public var payload: PushPayload

    public init(id: String, fireAt: LocalPlan.FireDate, title: String?, body: String?, payload: PushPayload) {
        self.id = id
        self.fireAt = fireAt
        self.title = title
        self.body = body
        self.payload = payload
    }

    /// The message this notification belongs to.
    public var messageId: String? { payload.bk.messageId }
}

/// The system's notification scheduler (`UNUserNotificationCenter` on iOS, a fake in tests).
public protocol NotificationScheduler: Sendable {
    /// Schedules (or replaces, by id) a calendar notification.
    func schedule(_ request: LocalNotificationRequest) async throws
    /// Ids of the notifications still pending.
    func pendingIdentifiers() async -> [String]
    /// Removes pending notifications by id (unknown ids are ignored).
    func removePending(ids: [String]) async
}

extension NotificationScheduler {
    /// Removes every pending notification whose id equals `prefix` or starts with it.
    /// Returns the ids removed.
    @discardableResult
    public func removePending(matching prefix: String) async -> [String] {
        let ids = await pendingIdentifiers().filter { $0 == prefix || $0.hasPrefix(prefix) }
        if !ids.isEmpty { await removePending(ids: ids) }
        return ids
    }
}

/// A scheduler that schedules nothing (platforms without notifications).
public struct NoNotificationScheduler: NotificationScheduler {
    public init() {}
    public func schedule(_ request: LocalNotificationRequest) async throws {}
    public func pendingIdentifiers() async -> [String] { [] }
    public func removePending(ids: [String]) async {}
}
