/// What a device receives: the APNs `aps` dictionary plus BuzzKit's own `bk` object.
///
/// The contract (server builds, SDK parses, one definition for both):
/// ```
/// {"aps": {"alert": {"title","subtitle","body"}, "badge", "sound", "category", "thread-id",
///          "mutable-content": 1, "content-available": 1, "interruption-level"},
///  "bk":  {"messageId", "deepLink", "action": {"name","data"},
///          "actions": [{"id","title","destructive","foreground","input","placeholder"}],
///          "image", "category", "data": {...}, "local": {...}, "cancel": {"runId"}}}
/// ```
/// The custom `data` travels as `bk.data`, exactly as sent: keeping it inside `bk` means it can
/// never collide with `aps` or another SDK's top-level keys. Absent members are left out; button
/// flags are written only when true. `encode()` gives the same bytes for the same value.
public struct PushPayload: Sendable, Hashable {
    /// APNs's limit for a notification payload (voip aside).
    public static let maxBytes = 4096
    /// A stand-in message id for size checks before the real id exists: 48 characters, longer
    /// than BuzzKit's ids, so a payload that passes the check also fits once sent.
    public static let sizeCheckMessageId = String(repeating: "m", count: 48)

    /// The `aps` dictionary, as Apple defines it.
    public struct APS: Sendable, Hashable {
        public struct Alert: Sendable, Hashable {
            public var title: String?
            public var subtitle: String?
            public var body: String?

            public init(title: String? = nil, subtitle: String? = nil, body: String? = nil) {
                self.title = title
                self.subtitle = subtitle
                self.body = body
            }
        }

        public var alert: Alert?
        public var badge: Int?
        public var sound: String?
        public var category: String?
        public var threadId: String?
        /// `mutable-content: 1`: iOS runs the notification service extension (images, buttons,
        /// delivered receipts).
        public var mutableContent: Bool
        /// `content-available: 1`: a silent push that wakes the app.
        public var contentAvailable: Bool
        public var interruptionLevel: InterruptionLevel?

        public init(
            alert: Alert? = nil, badge: Int? = nil, sound: String? = nil, category: String? = nil,
            threadId: String? = nil, mutableContent: Bool = false, contentAvailable: Bool = false,
            interruptionLevel: InterruptionLevel? = nil
        ) {
            self.alert = alert
            self.badge = badge
            self.sound = sound
            self.category = category
            self.threadId = threadId
            self.mutableContent = mutableContent
            self.contentAvailable = contentAvailable
            self.interruptionLevel = interruptionLevel
        }
    }

    /// BuzzKit's own keys (`bk`).
    public struct BuzzKit: Sendable, Hashable {
        public var messageId: String?
        public var deepLink: String?
        public var action: PushAction?
        public var actions: [PushButton]
        public var image: String?
        /// The category id the extension registers the buttons under (given or derived).
        public var category: String?
        /// The message's custom data, exactly as sent. Default empty (then left out).
        public var data: [String: JSONValue]
        public var local: LocalPlan?
        public var cancel: CancelPlan?

        public init(
            messageId: String? = nil, deepLink: String? = nil, action: PushAction? = nil,
            actions: [PushButton] = [], image: String? = nil, category: String? = nil,
            data: [String: JSONValue] = [:], local: LocalPlan? = nil, cancel: CancelPlan? = nil
        ) {
            self.messageId = messageId
            self.deepLink = deepLink
            self.action = action
            self.actions = actions
            self.image = image
            self.category = category
            self.data = data
            self.local = local
            self.cancel = cancel
        }
    }

    public var aps: APS
    public var bk: BuzzKit

    public init(aps: APS, bk: BuzzKit) {
        self.aps = aps
        self.bk = bk
    }

    /// True for a background push (`content-available` without anything shown): APNs push type
    /// `background`, priority 5.
    public var isSilent: Bool {
        aps.contentAvailable && aps.alert == nil && aps.sound == nil && aps.badge == nil
    }
}
