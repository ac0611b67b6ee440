#if canImport(UserNotifications) && os(iOS)
    @preconcurrency import UserNotifications
    import BuzzKit
    import BuzzKitWire
    import Foundation

    /// The notification service extension, ready to subclass:
    /// ```swift
    /// final class NotificationService: BuzzKitNotificationService {
    ///     override var buzzKitAppGroup: String? { "group.com.example.gym" }
    /// }
    /// ```
    /// For every BuzzKit notification it registers the buttons as a category (the message's, or
    /// one derived from the buttons; input buttons as text input actions), attaches the image, and
    /// sends `$notification.delivered`. With an app group the receipt goes through the app's
    /// shared queue: one that cannot reach the API in time is delivered on the app's next launch.
    open class BuzzKitNotificationService: UNNotificationServiceExtension, @unchecked Sendable {
        // @unchecked: iOS calls didReceive and serviceExtensionTimeWillExpire on one thread; the
        // stored handler and content are guarded by `lock`.
        private let lock = NSLock()
        private var contentHandler: ((UNNotificationContent) -> Void)?
        private var bestAttempt: UNMutableNotificationContent?

        /// The app group shared with the app (nil: receipts are best effort). Override.
        open var buzzKitAppGroup: String? { nil }

        /// API settings when the app has not stored them in the app group yet: by default read from
        /// the extension's Info.plist keys `BuzzKitAPIKey` and `BuzzKitBaseURL`.
        open var buzzKitConfiguration: BuzzKitConfiguration? {
            let info = Bundle.main.infoDictionary ?? [:]
            guard let key = info["BuzzKitAPIKey"] as? String,
                let base = (info["BuzzKitBaseURL"] as? String).flatMap(URL.init(string:))
            else { return nil }
            return BuzzKitConfiguration(apiKey: key, baseURL: base)
        }

        /// Seconds the receipt may take before it is left for the app. Default 5 (iOS allows ~30 s
        /// for the whole extension, images included).
        open var buzzKitReceiptDeadline: TimeInterval { 5 }

        open override func didReceive(
            _ request: UNNotificationRequest,
            withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void
        ) {
            guard let content = request.content.mutableCopy() as? UNMutableNotificationContent else {
                contentHandler(request.content)
                return
            }
            lock.withLock {
                self.contentHandler = contentHandler
                self.bestAttempt = content
            }
            guard let payload = try? PushPayload.parse(userInfo: request.content.userInfo) else {
                finish()
                return
            }
            let storage = storageDirectory()
            let configuration = buzzKitConfiguration
            let deadline = buzzKitReceiptDeadline
            let boxedContent = UncheckedContent(content: content)
            Task {
                if let spec = NotificationCategorySpec(payload: payload) {
                    await Self.register(spec)
                    boxedContent.content.categoryIdentifier = spec.id
                }
                if let image = payload.bk.image.flatMap(URL.init(string:)),
                    let attachment = await Self.attachment(from: image)
                {
                    boxedContent.content.attachments = [attachment]
                }
                if let messageId = payload.bk.messageId, let storage {
                    _ = await DeliveryReceipt.deliver(
                        messageId: messageId, storageDirectory: storage, configuration: configuration,
                        transport: URLSessionTransport(timeout: deadline), deadline: deadline)
                }
                self.finish()
            }
        }

        open override func serviceExtensionTimeWillExpire() { finish() }

        private func finish() {
            let (handler, content) = lock.withLock {
                () -> (((UNNotificationContent) -> Void)?, UNMutableNotificationContent?) in
                defer { contentHandler = nil }
                return (contentHandler, bestAttempt)
            }
            if let handler, let content { handler(content) }
        }

        /// The app group's BuzzKit folder (the app's own queue), else the extension's own container.
        private func storageDirectory() -> URL? {
            if let group = buzzKitAppGroup,
                let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group)
            {
                return container.appendingPathComponent("BuzzKit", isDirectory: true)
            }
            return try? FileManager.default.url(
                for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true
            )
            .appendingPathComponent("BuzzKitExtension", isDirectory: true)
        }

        /// Adds the category to the registered ones (iOS replaces the whole set, so merge by id).
        private static func register(_ spec: NotificationCategorySpec) async {
            let center = UNUserNotificationCenter.current()
            var categories = await center.notificationCategories()
            guard !categories.contains(where: { $0.identifier == spec.id }) else { return }
            let actions: [UNNotificationAction] = spec.actions.map { action in
                var options: UNNotificationActionOptions = []
                if action.destructive { options.insert(.destructive) }
                if action.foreground { options.insert(.foreground) }
                if action.textInput {
                    return UNTextInputNotificationAction(
                        identifier: action.id, title: action.title, options: options,
                        textInputButtonTitle: action.title,
                        textInputPlaceholder: action.placeholder ?? "")
                }
                return UNNotificationAction(identifier: action.id, title: action.title, options: options)
            }
            categories.insert(
                UNNotificationCategory(
                    identifier: spec.id, actions: actions, intentIdentifiers: [],
                    options: [.customDismissAction]))
            center.setNotificationCategories(categories)
        }

        private static func attachment(from url: URL) async -> UNNotificationAttachment? {
            guard let (file, response) = try? await URLSession.shared.download(from: url) else { return nil }
            let name = response.suggestedFilename ?? url.lastPathComponent
            let target = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString + "-" + name)
            guard (try? FileManager.default.moveItem(at: file, to: target)) != nil else { return nil }
            return try? UNNotificationAttachment(identifier: "image", url: target)
        }
    }

    /// The content being prepared, carried into the task. `@unchecked Sendable`: only that task
    /// mutates it, and `finish` reads it after the task (or after iOS's deadline, taking what is there).
    private final class UncheckedContent: @unchecked Sendable {
        let content: UNMutableNotificationContent
        init(content: UNMutableNotificationContent) { self.content = content }
    }
#endif
