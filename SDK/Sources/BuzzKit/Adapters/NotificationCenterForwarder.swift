#if canImport(UserNotifications)
    @preconcurrency import UserNotifications
    import BuzzKitWire
    import Foundation

    /// With `automaticPushHandling`, becomes the `UNUserNotificationCenter` delegate: opens and
    /// dismissals go to the SDK (after the delegate that was there before, which is still told),
    /// and notifications arriving in the foreground are shown as banners unless that delegate decides.
    ///
    /// `@unchecked Sendable`: `handler` is immutable and Sendable; `previous` is set once in `init`
    /// and only read afterwards.
    final class NotificationCenterForwarder: NSObject, UNUserNotificationCenterDelegate, @unchecked Sendable {
        typealias Handler = @Sendable (PlatformNotificationEvent) async -> RemoteNotificationOutcome

        private static let current = LockedBox<NotificationCenterForwarder?>(nil)

        private let handler: Handler
        private weak var previous: (any UNUserNotificationCenterDelegate)?

        private init(handler: @escaping Handler, previous: (any UNUserNotificationCenterDelegate)?) {
            self.handler = handler
            self.previous = previous
        }

        static func install(_ handler: @escaping Handler) {
            let center = UNUserNotificationCenter.current()
            let forwarder = NotificationCenterForwarder(handler: handler, previous: center.delegate)
            current.set(forwarder)  // the center holds its delegate weakly
            center.delegate = forwarder
        }

        func userNotificationCenter(
            _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
            withCompletionHandler completionHandler: @escaping () -> Void
        ) {
            let done = UncheckedBox(completionHandler)
            let payload = try? PushPayload.parse(userInfo: response.notification.request.content.userInfo)
            let action = response.actionIdentifier
            let input = (response as? UNTextInputNotificationResponse)?.userText
            if let previous,
                previous.responds(
                    to: #selector(
                        UNUserNotificationCenterDelegate.userNotificationCenter(_:didReceive:withCompletionHandler:)))
            {
                previous.userNotificationCenter?(center, didReceive: response, withCompletionHandler: {})
            }
            guard let payload else {
                done.value()
                return
            }
            let event: PlatformNotificationEvent
            switch action {
            case UNNotificationDismissActionIdentifier: event = .dismissed(payload)
            case UNNotificationDefaultActionIdentifier: event = .opened(payload, actionIdentifier: nil, input: nil)
            default: event = .opened(payload, actionIdentifier: action, input: input)
            }
            let handler = self.handler
            Task {
                _ = await handler(event)
                await MainActor.run { done.value() }
            }
        }

        func userNotificationCenter(
            _ center: UNUserNotificationCenter, willPresent notification: UNNotification,
            withCompletionHandler completionHandler: @escaping (UNNotificationPresentationOptions) -> Void
        ) {
            if let previous,
                previous.responds(
                    to: #selector(
                        UNUserNotificationCenterDelegate.userNotificationCenter(_:willPresent:withCompletionHandler:)))
            {
                previous.userNotificationCenter?(
                    center, willPresent: notification, withCompletionHandler: completionHandler)
                return
            }
            completionHandler([.banner, .list, .sound, .badge])
        }
    }

#endif
