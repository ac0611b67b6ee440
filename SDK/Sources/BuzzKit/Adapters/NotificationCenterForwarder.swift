#if canImport(UserNotifications)
@preconcurrency import UserNotifications
import BuzzKitWire
import Foundation

/// With `automaticPushHandling`, becomes the `UNUserNotificationCenter` delegate: opens and
/// dismissals go to the SDK (then to the delegate that was there before), and notifications
/// arriving in the foreground are shown as banners.
///
/// `@unchecked Sendable`: `client` and `previous` are set once in `install` before the forwarder
/// is handed to the center, and only read afterwards.
final class NotificationCenterForwarder: NSObject, UNUserNotificationCenterDelegate, @unchecked Sendable {
    private static let current = LockedBox<NotificationCenterForwarder?>(nil)

    private weak var client: BuzzKit?
    private weak var previous: (any UNUserNotificationCenterDelegate)?

    static func install(for client: BuzzKit) {
        let center = UNUserNotificationCenter.current()
        let forwarder = NotificationCenterForwarder()
        forwarder.client = client
        forwarder.previous = center.delegate
        current.set(forwarder)  // the center holds its delegate weakly
        center.delegate = forwarder
    }

    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
                                withCompletionHandler completionHandler: @escaping () -> Void) {
        let done = UncheckedBox(completionHandler)
        let userInfo = response.notification.request.content.userInfo
        let payload = try? PushPayload.parse(userInfo: userInfo)
        let action = response.actionIdentifier
        let input = (response as? UNTextInputNotificationResponse)?.userText
        if let previous, previous.responds(to: #selector(UNUserNotificationCenterDelegate.userNotificationCenter(_:didReceive:withCompletionHandler:))) {
            previous.userNotificationCenter?(center, didReceive: response, withCompletionHandler: {})
        }
        guard let client, let payload else {
            done.value()
            return
        }
        Task {
            switch action {
            case UNNotificationDismissActionIdentifier:
                await client.notificationDismissed(payload)
            case UNNotificationDefaultActionIdentifier:
                await client.notificationOpened(payload, actionIdentifier: nil)
            default:
                await client.notificationOpened(payload, actionIdentifier: action, input: input)
            }
            await MainActor.run { done.value() }
        }
    }

    func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification,
                                withCompletionHandler completionHandler: @escaping (UNNotificationPresentationOptions) -> Void) {
        if let previous, previous.responds(to: #selector(UNUserNotificationCenterDelegate.userNotificationCenter(_:willPresent:withCompletionHandler:))) {
            previous.userNotificationCenter?(center, willPresent: notification, withCompletionHandler: completionHandler)
            return
        }
        completionHandler([.banner, .list, .sound, .badge])
    }
}

#endif
