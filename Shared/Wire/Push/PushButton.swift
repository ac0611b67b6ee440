/// One action button on a notification (at most `MessageContent.maxButtons`). The notification
/// service extension turns the buttons into a `UNNotificationCategory`; `input` makes a text input
/// action whose field shows `placeholder`. Flags default to false.
public struct PushButton: Sendable, Hashable {
    /// What the app receives as `actionIdentifier` when the button is tapped.
    public var id: String
    public var title: String
    public var destructive: Bool
    /// Opens the app when tapped (`UNNotificationActionOptions.foreground`).
    public var foreground: Bool
    public var input: Bool
    /// Placeholder text of the input field; only with `input`.
    public var placeholder: String?

    public init(
        id: String, title: String, destructive: Bool = false, foreground: Bool = false,
        input: Bool = false, placeholder: String? = nil
    ) {
        self.id = id
        self.title = title
        self.destructive = destructive
        self.foreground = foreground
        self.input = input
        self.placeholder = placeholder
    }
}
