import BuzzKitWire

/// The notification category a message's buttons become, in a platform-neutral form (the
/// service extension turns it into a `UNNotificationCategory`).
///
/// Its id is the message's `category` when it has one, else one derived from the buttons
/// (`PushPayload.derivedCategory(for:)`, the same the server puts in `aps.category`). An input
/// button becomes a text input action whose field shows its placeholder. The category asks iOS
/// to report dismissals, so `$notification.dismissed` can be tracked.
public struct NotificationCategorySpec: Sendable, Hashable {
    public struct Action: Sendable, Hashable {
        public var id: String
        public var title: String
        public var destructive: Bool
        public var foreground: Bool
        /// A text input action (`UNTextInputNotificationAction`).
        public var textInput: Bool
        /// The input field's placeholder; only with `textInput`.
        public var placeholder: String?
    }

    public var id: String
    public var actions: [Action]

    /// The category for `payload`, nil when it has no buttons.
    public init?(payload: PushPayload) {
        let buttons = payload.bk.actions
        guard !buttons.isEmpty else { return nil }
        id = payload.bk.category ?? payload.aps.category ?? PushPayload.derivedCategory(for: buttons)
        actions = buttons.map { button in
            Action(
                id: button.id, title: button.title, destructive: button.destructive, foreground: button.foreground,
                textInput: button.input, placeholder: button.input ? (button.placeholder ?? "") : nil)
        }
    }
}
