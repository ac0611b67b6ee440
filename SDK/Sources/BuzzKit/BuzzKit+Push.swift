import BuzzKitWire
import Foundation

/// What a silent push did, for `UIBackgroundFetchResult` (`.newData` / `.noData`).
public enum RemoteNotificationOutcome: Sendable, Hashable {
    case newData
    case noData
}

/// How a deep link was routed: the `via` of `$deeplink.opened`.
public enum DeepLinkRoute: String, Sendable, Hashable {
    case delegate, handler, system
}

extension BuzzKit {
    // MARK: - Events the platform reports (automaticPushHandling)

    /// Reacts to a notification event from the platform's `PushNotificationSource` (what
    /// `automaticPushHandling` wires up; tests may call it too).
    @discardableResult
    public func handle(_ event: PlatformNotificationEvent) async -> RemoteNotificationOutcome {
        switch event {
        case .received(let payload):
            return await didReceiveRemoteNotification(payload)
        case .opened(let payload, let actionIdentifier, let input):
            await notificationOpened(payload, actionIdentifier: actionIdentifier, input: input)
        case .dismissed(let payload):
            await notificationDismissed(payload)
        case .deviceToken(let token):
            await registerDeviceToken(token)
        }
        return .noData
    }

    // MARK: - Silent pushes (bk.local, bk.cancel)

    /// Handles a remote notification's `userInfo` in the background: a `bk.local` plan is
    /// scheduled, a `bk.cancel` removes what its run scheduled. `.newData` when it did either,
    /// `.noData` otherwise (including payloads not sent by BuzzKit).
    public func didReceiveRemoteNotification(userInfo: [AnyHashable: Any]) async -> RemoteNotificationOutcome {
        guard let payload = try? PushPayload.parse(userInfo: userInfo) else { return .noData }
        return await didReceiveRemoteNotification(payload)
    }

    /// `didReceiveRemoteNotification(userInfo:)` for an already parsed payload.
    public func didReceiveRemoteNotification(_ payload: PushPayload) async -> RemoteNotificationOutcome {
        var outcome = RemoteNotificationOutcome.noData
        if let plan = payload.bk.local, await schedule(plan, messageId: payload.bk.messageId) { outcome = .newData }
        if let cancel = payload.bk.cancel {
            await jobs.run { [self] in try? await store.forgetCancelOn(matching: cancel.runId) }
            let removed = await platform.notifications.removePending(matching: cancel.runId)
            logger.info(
                "local notifications cancelled by the server", ["run.id": cancel.runId, "count": String(removed.count)])
            outcome = .newData
        }
        return outcome
    }

    /// Schedules a local plan at its wall-clock components, keeps its message id, persists its
    /// `cancelOn` names, tracks `$local.scheduled` and flushes at once (the acknowledgement the
    /// workflow waits for).
    private func schedule(_ plan: LocalPlan, messageId: String?) async -> Bool {
        let messageId = plan.messageId ?? messageId
        var content = PushPayload(
            aps: .init(alert: .init(title: plan.title, body: plan.body)),
            bk: .init(messageId: messageId, deepLink: plan.deepLink, data: plan.data))
        if plan.title == nil && plan.body == nil { content.aps.alert = nil }
        let request = LocalNotificationRequest(
            id: plan.id, fireAt: plan.fireAt, title: plan.title, body: plan.body,
            payload: content)
        do {
            try await platform.notifications.schedule(request)
        } catch {
            logger.error(
                "cannot schedule a local notification", ["local.id": plan.id, "error": String(describing: error)])
            return false
        }
        if !plan.cancelOn.isEmpty {
            await jobs.run { [self] in
                do { try await store.addCancelOn(plan.cancelOn, localId: plan.id) } catch {
                    logger.error(
                        "cannot store cancelOn names", ["local.id": plan.id, "error": String(describing: error)])
                }
            }
        }
        var data: [String: JSONValue] = ["localId": .string(plan.id)]
        if let messageId { data["messageId"] = .string(messageId) }
        emit(ReservedEvent.localScheduled, data)
        await flushEvents()
        return true
    }

    // MARK: - Opened and dismissed

    /// The person opened a notification (`userInfo` as iOS hands it). See `notificationOpened(_:actionIdentifier:input:)`.
    public func notificationOpened(userInfo: [AnyHashable: Any], actionIdentifier: String?, input: String? = nil) async
    {
        guard let payload = try? PushPayload.parse(userInfo: userInfo) else { return }
        await notificationOpened(payload, actionIdentifier: actionIdentifier, input: input)
    }

    /// The person opened a notification: tracks `$notification.opened` (with `action` = the tapped
    /// button's id, `input` = typed text, `deepLink`), runs the named action first
    /// (`$action.triggered` with `handled`), then routes the deep link delegate → `onDeepLink`
    /// handler → system (`$deeplink.opened` with `via`), tells the delegate, and flushes.
    public func notificationOpened(_ payload: PushPayload, actionIdentifier: String?, input: String? = nil) async {
        let messageId = payload.bk.messageId
        if let messageId {
            var data: [String: JSONValue] = ["messageId": .string(messageId)]
            if let actionIdentifier { data["action"] = .string(actionIdentifier) }
            if let input { data["input"] = .string(input) }
            if let link = payload.bk.deepLink { data["deepLink"] = .string(link) }
            emit(ReservedEvent.notificationOpened, data)
        }
        if let action = payload.bk.action { await run(action, messageId: messageId) }
        if let link = payload.bk.deepLink {
            if let url = URL(string: link), url.scheme != nil {
                await route(url, messageId: messageId)
            } else {
                logger.warning("deep link is not a URL; not routed", ["deepLink": link])
            }
        }
        let delegate = self.delegate
        if let delegate {
            await MainActor.run { delegate.buzzKit(self, didOpen: payload, actionIdentifier: actionIdentifier) }
        }
        await flushEvents()
    }

    /// The person dismissed a notification (iOS reports it only for categories with buttons):
    /// tracks `$notification.dismissed` and flushes.
    public func notificationDismissed(_ payload: PushPayload) async {
        guard let messageId = payload.bk.messageId else { return }
        emit(ReservedEvent.notificationDismissed, ["messageId": .string(messageId)])
        await flushEvents()
    }

    public func notificationDismissed(userInfo: [AnyHashable: Any]) async {
        guard let payload = try? PushPayload.parse(userInfo: userInfo) else { return }
        await notificationDismissed(payload)
    }

    /// Runs the named action's handler; `$action.triggered {name, handled}`. An action without a
    /// handler logs a warning and does nothing else.
    func run(_ action: PushAction, messageId: String?) async {
        let handler = actions.handler(for: action.name)
        if let handler {
            await MainActor.run { handler(action) }
        } else {
            logger.warning("no handler registered for action", ["action.name": action.name])
        }
        var data: [String: JSONValue] = ["name": .string(action.name), "handled": .bool(handler != nil)]
        if let messageId { data["messageId"] = .string(messageId) }
        emit(ReservedEvent.actionTriggered, data)
    }

    /// Routes a deep link: the delegate, then the `onDeepLink` closure, then the system.
    @discardableResult
    func route(_ url: URL, messageId: String?) async -> DeepLinkRoute {
        let (delegate, handler) = state.withLock { ($0.delegate, $0.deepLinkHandler) }
        var via = DeepLinkRoute.system
        if let delegate, await MainActor.run(body: { delegate.buzzKit(self, openDeepLink: url) }) {
            via = .delegate
        } else if let handler {
            await MainActor.run { handler(url) }
            via = .handler
        } else {
            await platform.opener.open(url)
        }
        var data: [String: JSONValue] = ["url": .string(url.absoluteString), "via": .string(via.rawValue)]
        if let messageId { data["messageId"] = .string(messageId) }
        emit(ReservedEvent.deeplinkOpened, data)
        return via
    }
}
