import BuzzKitWire

/// A notification event the platform reports on its own (with `automaticPushHandling`).
public enum PlatformNotificationEvent: Sendable, Hashable {
    /// A remote notification reached the app (a silent push waking it, or one arriving while it
    /// runs). Answered with `.newData` / `.noData` for `UIBackgroundFetchResult`.
    case received(PushPayload)
    /// The person opened a notification: `actionIdentifier` is the tapped button's id (nil for
    /// the body), `input` the text typed into an input button.
    case opened(PushPayload, actionIdentifier: String?, input: String?)
    /// The person dismissed a notification (iOS reports it for categories with buttons).
    case dismissed(PushPayload)
    /// APNs gave the app its device token.
    case deviceToken([UInt8])
}

/// Where notification events come from without the app forwarding them: on iOS the
/// `UNUserNotificationCenter` delegate and the app delegate's remote-notification methods
/// (`UserNotificationsPushSource`); a fake in tests.
///
/// `start` is called once by `BuzzKit.start()`, and only when `automaticPushHandling` is on
/// (the default). The source calls `handler` for each event and may await it; the answer
/// matters for `.received` only.
public protocol PushNotificationSource: Sendable {
    func start(_ handler: @escaping @Sendable (PlatformNotificationEvent) async -> RemoteNotificationOutcome)
}

/// A source that reports nothing (Linux processes; apps that forward by hand).
public struct NoPushNotificationSource: PushNotificationSource {
    public init() {}
    public func start(_ handler: @escaping @Sendable (PlatformNotificationEvent) async -> RemoteNotificationOutcome) {}
}
