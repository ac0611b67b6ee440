extension PushPayload {
    /// The payload for one message: alert, sound, badge and thread from the content;
    /// `mutable-content` when it has an image or buttons; `content-available` when it is silent;
    /// the category given, or derived from the buttons; BuzzKit's keys under `bk`.
    public init(content: MessageContent, messageId: String) {
        let hasAlert = content.title != nil || content.subtitle != nil || content.body != nil
        let category = content.category ?? (content.actions.isEmpty ? nil : Self.derivedCategory(for: content.actions))
        aps = APS(
            alert: hasAlert ? APS.Alert(title: content.title, subtitle: content.subtitle, body: content.body) : nil,
            badge: content.badge,
            sound: content.sound,
            category: category,
            threadId: content.threadId,
            mutableContent: content.image != nil || !content.actions.isEmpty,
            contentAvailable: content.isSilent,
            interruptionLevel: content.interruptionLevel)
        bk = BuzzKit(
            messageId: messageId, deepLink: content.deepLink, action: content.action,
            actions: content.actions, image: content.image, category: category, data: content.data)
    }

    /// A silent push handing the device a local plan (`bk.local`).
    public static func local(_ plan: LocalPlan, messageId: String? = nil) -> PushPayload {
        PushPayload(aps: APS(contentAvailable: true), bk: BuzzKit(messageId: messageId ?? plan.messageId, local: plan))
    }

    /// A silent push cancelling a run's scheduled notifications (`bk.cancel`).
    public static func cancel(runId: String, messageId: String? = nil) -> PushPayload {
        PushPayload(
            aps: APS(contentAvailable: true), bk: BuzzKit(messageId: messageId, cancel: CancelPlan(runId: runId)))
    }

    /// A category id for a set of buttons: `bk.` and 16 hex digits of a 64-bit FNV-1a hash of the
    /// buttons' ids, titles, flags and placeholders, in order.
    ///
    /// Stable across processes, platforms and releases (no `Hasher`, whose seed changes per run),
    /// so the extension registers one category per distinct set of buttons, and a change of any
    /// title gives a new id (iOS caches categories by id).
    public static func derivedCategory(for buttons: [PushButton]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        func mix(_ text: String) { for byte in text.utf8 { mix(byte) } }
        for button in buttons {
            mix(button.id)
            mix(0x1F)
            mix(button.title)
            mix(0x1F)
            mix(button.destructive ? 0x31 : 0x30)
            mix(button.foreground ? 0x31 : 0x30)
            mix(button.input ? 0x31 : 0x30)
            mix(0x1F)
            if let placeholder = button.placeholder {
                mix(0x31)
                mix(placeholder)
            } else {
                mix(0x30)
            }
            mix(0x1E)
        }
        var text: [UInt8] = Array("bk.".utf8)
        for shift in stride(from: 60, through: 0, by: -4) { text.append(Hex.digit(hash >> UInt64(shift))) }
        return String(decoding: text, as: UTF8.self)
    }
}
