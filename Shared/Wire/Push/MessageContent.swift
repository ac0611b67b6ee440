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

    // MARK: - Rules the API document states as they are (`validate` checks them)

    /// `deepLink`: a URL with an RFC 3986 scheme (a letter, then letters, digits, `+ - .`), a colon and more
    /// (no U+0000, which no request string may hold).
    public static let deepLinkRule = TextRule(
        maxLength: Int.max, pattern: #"^[A-Za-z][A-Za-z0-9+.-]*:[^\x00]+$"#,
        problem: "must be a URL with a scheme, such as myapp://orders/42",
        accepts: hasScheme)
    /// `image`: an `http` or `https` URL (scheme in any case) of RFC 3986 characters.
    public static let imageRule = TextRule(
        maxLength: Int.max, pattern: "^[Hh][Tt][Tt][Pp][Ss]?://[\(urlCharacters.regexClass)]+$",
        problem: "must be an http or https URL", accepts: isImageURL)
    /// `collapseId`: what `apns-collapse-id` takes.
    public static let collapseIdRule = TextRule.length(1, maxCollapseIdBytes).limited(toUTF8Bytes: maxCollapseIdBytes)
    /// `action.name`: at most 128 bytes.
    public static let actionNameRule = TextRule.length(1, 128).limited(toUTF8Bytes: 128)
    /// A button's `id`: at most 64 bytes.
    public static let buttonIdRule = TextRule.length(1, 64).limited(toUTF8Bytes: 64)

    /// RFC 3986's unreserved, reserved and `%` characters.
    static let urlCharacters = ASCIIClass(
        ASCIIClass.upper + ASCIIClass.lower + ASCIIClass.digits
            + ASCIIClass.chars("-._~:/?#[]@!$&'()*+,;=%"))

    static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let scheme = text.utf8[..<colon]
        func isLetter(_ c: UInt8) -> Bool { (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A }
        guard let first = scheme.first, isLetter(first) else { return false }
        let valid = scheme.allSatisfy {
            isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E
        }
        return valid && text.utf8.index(after: colon) != text.utf8.endIndex && !text.utf8.contains(0)
    }

    static func isImageURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        let prefix = lower.hasPrefix("https://") ? 8 : lower.hasPrefix("http://") ? 7 : 0
        guard prefix > 0 else { return false }
        let rest = text.utf8.dropFirst(prefix)
        return !rest.isEmpty && rest.allSatisfy(urlCharacters.contains)
    }

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

    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil,
        data: [String: JSONValue] = [:], deepLink: String? = nil, action: PushAction? = nil,
        actions: [PushButton] = [], category: String? = nil, image: String? = nil,
        sound: String? = nil, badge: Int? = nil, threadId: String? = nil,
        interruptionLevel: InterruptionLevel? = nil, priority: PushPriority? = nil,
        expiresAt: Date? = nil, collapseId: String? = nil
    ) {
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
