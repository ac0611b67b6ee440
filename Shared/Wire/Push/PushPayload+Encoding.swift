extension PushPayload {
    /// The payload's JSON bytes, compact and deterministic: members in the contract's order
    /// (`aps` then `bk`; inside them as listed on `PushPayload`), keys of custom data sorted.
    public func encode() -> [UInt8] {
        var o = ObjectWriter()
        o.open()
        o.key("aps")
        writeAPS(&o)
        o.key("bk")
        writeBuzzKit(&o)
        o.close()
        return o.w.bytes
    }

    /// `encode()` as a String (for logs and the ledger).
    public var jsonString: String { String(decoding: encode(), as: UTF8.self) }

    private func writeAPS(_ o: inout ObjectWriter) {
        o.open()
        if let alert = aps.alert {
            o.key("alert")
            o.open()
            if let title = alert.title {
                o.key("title")
                o.w.string(title)
            }
            if let subtitle = alert.subtitle {
                o.key("subtitle")
                o.w.string(subtitle)
            }
            if let body = alert.body {
                o.key("body")
                o.w.string(body)
            }
            o.close()
        }
        if let badge = aps.badge {
            o.key("badge")
            o.w.int(badge)
        }
        if let sound = aps.sound {
            o.key("sound")
            o.w.string(sound)
        }
        if let category = aps.category {
            o.key("category")
            o.w.string(category)
        }
        if let threadId = aps.threadId {
            o.key("thread-id")
            o.w.string(threadId)
        }
        if aps.mutableContent {
            o.key("mutable-content")
            o.w.raw("1")
        }
        if aps.contentAvailable {
            o.key("content-available")
            o.w.raw("1")
        }
        if let level = aps.interruptionLevel {
            o.key("interruption-level")
            o.w.string(level.rawValue)
        }
        o.close()
    }

    private func writeBuzzKit(_ o: inout ObjectWriter) {
        o.open()
        if let messageId = bk.messageId {
            o.key("messageId")
            o.w.string(messageId)
        }
        if let deepLink = bk.deepLink {
            o.key("deepLink")
            o.w.string(deepLink)
        }
        if let action = bk.action {
            o.key("action")
            o.open()
            o.key("name")
            o.w.string(action.name)
            if !action.data.isEmpty {
                o.key("data")
                o.w.value(.object(action.data))
            }
            o.close()
        }
        if !bk.actions.isEmpty {
            o.key("actions")
            o.w.raw("[")
            for (index, button) in bk.actions.enumerated() {
                if index > 0 { o.w.raw(",") }
                o.open()
                o.key("id")
                o.w.string(button.id)
                o.key("title")
                o.w.string(button.title)
                if button.destructive {
                    o.key("destructive")
                    o.w.raw("true")
                }
                if button.foreground {
                    o.key("foreground")
                    o.w.raw("true")
                }
                if button.input {
                    o.key("input")
                    o.w.raw("true")
                }
                if let placeholder = button.placeholder {
                    o.key("placeholder")
                    o.w.string(placeholder)
                }
                o.close()
            }
            o.w.raw("]")
        }
        if let image = bk.image {
            o.key("image")
            o.w.string(image)
        }
        if let category = bk.category {
            o.key("category")
            o.w.string(category)
        }
        if !bk.data.isEmpty {
            o.key("data")
            o.w.value(.object(bk.data))
        }
        if let local = bk.local {
            o.key("local")
            Self.writeLocal(local, &o)
        }
        if let cancel = bk.cancel {
            o.key("cancel")
            o.open()
            o.key("runId")
            o.w.string(cancel.runId)
            o.close()
        }
        o.close()
    }

    private static func writeLocal(_ plan: LocalPlan, _ o: inout ObjectWriter) {
        o.open()
        o.key("id")
        o.w.string(plan.id)
        o.key("at")
        o.open()
        o.key("year")
        o.w.int(plan.fireAt.year)
        o.key("month")
        o.w.int(plan.fireAt.month)
        o.key("day")
        o.w.int(plan.fireAt.day)
        o.key("hour")
        o.w.int(plan.fireAt.hour)
        o.key("minute")
        o.w.int(plan.fireAt.minute)
        if plan.fireAt.second != 0 {
            o.key("second")
            o.w.int(plan.fireAt.second)
        }
        o.close()
        if let title = plan.title {
            o.key("title")
            o.w.string(title)
        }
        if let body = plan.body {
            o.key("body")
            o.w.string(body)
        }
        if !plan.data.isEmpty {
            o.key("data")
            o.w.value(.object(plan.data))
        }
        if let deepLink = plan.deepLink {
            o.key("deepLink")
            o.w.string(deepLink)
        }
        if !plan.cancelOn.isEmpty {
            o.key("cancelOn")
            o.w.value(.array(plan.cancelOn.map { .string($0) }))
        }
        if let messageId = plan.messageId {
            o.key("messageId")
            o.w.string(messageId)
        }
        o.close()
    }
}

/// A `JSONWriter` that knows, per open object, whether a comma is due before the next key.
private struct ObjectWriter {
    var w = JSONWriter(capacity: 512)
    private var needsComma: [Bool] = []

    mutating func open() {
        w.raw("{")
        needsComma.append(false)
    }

    mutating func key(_ name: StaticString) {
        if needsComma.last == true { w.raw(",") }
        if !needsComma.isEmpty { needsComma[needsComma.count - 1] = true }
        w.raw("\"")
        w.raw(name)
        w.raw("\":")
    }

    mutating func close() {
        w.raw("}")
        needsComma.removeLast()
    }
}
