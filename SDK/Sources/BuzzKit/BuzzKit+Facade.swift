import BuzzKitWire
import Foundation
import Synchronization

/// What the static facade holds: the shared instance and what the app set before configuring.
private struct FacadeState: Sendable {
    var shared: BuzzKit?
    var delegate: (any BuzzKitDelegate)?
    var deepLinkHandler: DeepLinkHandler?
}

private let facade = Mutex(FacadeState())
private let sharedActions = ActionRegistry()
private let detachedActivities = Activities()

extension BuzzKit {
    /// The instance `configure` created (nil before it).
    public static var shared: BuzzKit? { facade.withLock { $0.shared } }

    /// Configures the shared instance with the platform's real adapters and starts it: opens the
    /// queue, installs lifecycle observers (and, with `automaticPushHandling`, the notification
    /// delegate), emits `$app.installed` / `$app.updated`, and flushes 5 s later. Call once at
    /// launch; a second call is ignored (logged).
    public static func configure(_ configuration: Configuration) {
        configure(configuration, platform: .current)
    }

    /// `configure(_:)` with a platform of your own (Linux processes, tests of the facade).
    public static func configure(_ configuration: Configuration, platform: Platform) {
        let logger = SDKLogger(handler: configuration.logHandler)
        let client: BuzzKit
        do {
            client = try BuzzKit(configuration: configuration, platform: platform, actions: sharedActions)
        } catch {
            logger.error(
                "BuzzKit could not open its storage; nothing will be tracked", ["error": String(describing: error)])
            return
        }
        let installed = facade.withLock { f -> Bool in
            guard f.shared == nil else { return false }
            f.shared = client
            client.delegate = f.delegate
            if let handler = f.deepLinkHandler { client.onDeepLink(handler) }
            return true
        }
        guard installed else {
            logger.warning("BuzzKit.configure called again; ignored")
            return
        }
        // The push source (notification center delegate, app delegate forwarding) goes in now,
        // before the launch returns, so the tap that launched the app is not missed.
        client.startPushHandling()
        Task { await client.start() }
    }

    /// Identifies the installation, with the subscriber's signature when the app has one (see the
    /// instance method).
    public static func identify(_ subscriberId: String, signature: String? = nil) {
        withShared("identify") { $0.identify(subscriberId, signature: signature) }
    }

    /// Forgets the subscriber (see the instance method).
    public static func reset() { withShared("reset") { $0.reset() } }

    /// Tracks a custom event; returns at once (see the instance method).
    public static func track(_ name: String, data: [String: JSONValue]? = nil) {
        withShared("track") { $0.track(name, data: data) }
    }

    public static func pendingEventCount() async -> Int { await shared?.pendingEventCount() ?? 0 }

    public static func flushEvents() async { await shared?.flushEvents() }

    /// Routes deep links no delegate took. May be called before `configure`.
    public static func onDeepLink(_ handler: @escaping DeepLinkHandler) {
        let client = facade.withLock { f -> BuzzKit? in
            f.deepLinkHandler = handler
            return f.shared
        }
        client?.onDeepLink(handler)
    }

    /// The delegate (held strongly). May be set before `configure`.
    public static var delegate: (any BuzzKitDelegate)? {
        get { facade.withLock { $0.delegate } }
        set {
            let client = facade.withLock { f -> BuzzKit? in
                f.delegate = newValue
                return f.shared
            }
            client?.delegate = newValue
        }
    }

    /// Named action handlers, shared by the configured instance. May be used before `configure`.
    public static var actions: ActionRegistry { sharedActions }

    /// Live Activity token registration for the configured instance.
    public static var activities: Activities { shared?.activities ?? detachedActivities }

    public static func didReceiveRemoteNotification(userInfo: [AnyHashable: Any]) async -> RemoteNotificationOutcome {
        guard let payload = try? PushPayload.parse(userInfo: userInfo) else { return .noData }
        guard let client = shared else { return .noData }
        return await client.didReceiveRemoteNotification(payload)
    }

    /// A notification was opened (only needed with `automaticPushHandling` off).
    public static func notificationOpened(userInfo: [AnyHashable: Any], actionIdentifier: String?, input: String? = nil)
        async
    {
        guard let payload = try? PushPayload.parse(userInfo: userInfo), let client = shared else { return }
        await client.notificationOpened(payload, actionIdentifier: actionIdentifier, input: input)
    }

    /// A notification was dismissed (only needed with `automaticPushHandling` off).
    public static func notificationDismissed(userInfo: [AnyHashable: Any]) async {
        guard let payload = try? PushPayload.parse(userInfo: userInfo), let client = shared else { return }
        await client.notificationDismissed(payload)
    }

    /// The APNs device token (only needed with `automaticPushHandling` off).
    public static func registerDeviceToken(_ token: Data, permission: NotificationPermission? = nil) async {
        await shared?.registerDeviceToken(Array(token), permission: permission)
    }

    private static func withShared(_ call: String, _ body: (BuzzKit) -> Void) {
        // Before configure there is no queue to write to: the call is dropped (nothing to log to yet).
        guard let client = shared else { return }
        body(client)
    }
}
