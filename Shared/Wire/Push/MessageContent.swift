import Foundation

/// What a message says and does, as `POST /v1/messages` (or a workflow `send` step) gives it: the
/// content part of the request, without its target.
///
/// Build one with `MessageContent.validate(_:)` from a request body (which checks every rule and
/// the encoded size), or directly in code. `PushPayload(content:messageId:)` turns it into what a
/// device receives.
///
/// A message with no `title`, `subtitle`, `body`, `sound` or `badge` is *silent*: it is sent as a
/// background push (`content-available: 1`, priority normal) that wakes the app with its `data`.
public struct MessageContent: Sendable, Hashable {
    /// At most this many action buttons (what iOS shows).
    public static let maxButtons = 4
    /// `apns-collapse-id` limit, in UTF-8 bytes.
    public static let maxCollapseIdBytes = 64

    public var title: String?
    public var subtitle: String?
    public var body: String?
    /// Custom data, delivered exactly as sent (as `bk.data`). Default empty.
    public var data: [String: JSONValue]
    /// A URL the SDK routes when the notification is opened.
    public var deepLink: String?
    public var action: PushAction?
    /// Action buttons, at most `maxButtons`.
    public var actions: [PushButton]
    /// The notification category; when nil and there are buttons, one is derived from them
    /// (`PushPayload.derivedCategory(for:)`).
    public var category: String?
    /// An image URL the notification service extension attaches.
    public var image: String?
    /// A sound name (`"default"` for the system sound).
    public var sound: String?
    public var badge: Int?
    public var threadId: String?
    public var interruptionLevel: InterruptionLevel?
    /// Nil: high for visible notifications, normal for silent ones (see `effectivePriority`).
    public var priority: PushPriority?
    /// After this moment APNs stops trying to deliver (`apns-expiration`, whole seconds).
    public var expiresAt: Date?
    /// `apns-collapse-id`: a newer notification with the same id replaces the older one.
    public var collapseId: String?

    public init(title: String? = nil, subtitle: String? = nil, body: String? = nil,
                data: [String: JSONValue] = [:], deepLink: String? = nil, action: PushAction? = nil,
                actions: [PushButton] = [], category: String? = nil, image: String? = nil,
                sound: String? = nil, badge: Int? = nil, threadId: String? = nil,
                interruptionLevel: InterruptionLevel? = nil, priority: PushPriority? = nil,
                expiresAt: Date? = nil, collapseId: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.data = data
        self.deepLink = deepLink
        self.action = action
        self.actions = actions
        self.category = category
        self.image = image
        self.sound = sound
        self.badge = badge
        self.threadId = threadId
        self.interruptionLevel = interruptionLevel
        self.priority = priority
        self.expiresAt = expiresAt
        self.collapseId = collapseId
    }

    /// True when nothing would be shown, played or badged: a background (silent) push.
    public var isSilent: Bool {
        title == nil && subtitle == nil && body == nil && sound == nil && badge == nil
    }

    /// The priority to send with: the given one, else high (visible) or normal (silent).
    public var effectivePriority: PushPriority {
        priority ?? (isSilent ? .normal : .high)
    }
}
