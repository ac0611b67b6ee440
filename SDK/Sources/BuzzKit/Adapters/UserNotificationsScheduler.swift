#if canImport(UserNotifications)
    import BuzzKitWire
    import Foundation
    import UserNotifications

    /// Local notifications through `UNUserNotificationCenter`, with a `UNCalendarNotificationTrigger`
    /// from the plan's date components (no calendar or timezone: it fires at that wall-clock time in
    /// whatever zone the device is in). `userInfo` carries the BuzzKit payload (message id, deep
    /// link, data; JSON nulls left out, since `userInfo` must be a property list).
    public struct UserNotificationsScheduler: NotificationScheduler {
        public init() {}

        public func schedule(_ request: LocalNotificationRequest) async throws {
            let content = UNMutableNotificationContent()
            if let title = request.title { content.title = title }
            if let body = request.body { content.body = body }
            content.sound = .default
            if let value = try? JSONValue.parse(request.payload.encode()),
                let info = value.propertyList as? [String: Any]
            {
                content.userInfo = info
            }
            var components = DateComponents()
            components.year = request.fireAt.year
            components.month = request.fireAt.month
            components.day = request.fireAt.day
            components.hour = request.fireAt.hour
            components.minute = request.fireAt.minute
            components.second = request.fireAt.second
            let trigger = UNCalendarNotificationTrigger(dateMatching: components, repeats: false)
            try await UNUserNotificationCenter.current().add(
                UNNotificationRequest(
                    identifier: request.id, content: content,
                    trigger: trigger))
        }

        public func pendingIdentifiers() async -> [String] {
            await UNUserNotificationCenter.current().pendingNotificationRequests().map(\.identifier)
        }

        public func removePending(ids: [String]) async {
            UNUserNotificationCenter.current().removePendingNotificationRequests(withIdentifiers: ids)
        }
    }
#endif
