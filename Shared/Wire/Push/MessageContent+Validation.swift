import Foundation

extension MessageContent {
    /// Reads the content members of a request body and checks them, collecting every problem.
    ///
    /// Members read: `title`, `subtitle`, `body`, `data`, `deepLink`, `action`, `actions`,
    /// `category`, `image`, `sound`, `badge`, `threadId`, `interruptionLevel`, `priority`,
    /// `expiresAt`, `collapseId`; anything else (the target: `to`, `topic`, ...) is ignored, and a
    /// JSON `null` counts as absent. See `issues(now:messageIdForSizeCheck:)` for the rules; on top
    /// of those each member must have its JSON type (`data` an object, `badge` an integer,
    /// `priority` `"high"|"normal"|10|5`, `expiresAt` ISO 8601 with an offset, ...).
    public static func validate(
        _ body: JSONValue, now: Date = Date(),
        messageIdForSizeCheck: String = PushPayload.sizeCheckMessageId
    )
        -> Result<MessageContent, MessageContentRejection>
    {
        guard case .object(let object) = body else {
            return .failure(
                MessageContentRejection(issues: [
                    ValidationIssue(path: "body", message: "the message must be a JSON object")
                ]))
        }
        var reader = MemberReader(object: object)
        var content = MessageContent()
        content.title = reader.string("title")
        content.subtitle = reader.string("subtitle")
        content.body = reader.string("body")
        content.data = reader.object("data") ?? [:]
        content.deepLink = reader.string("deepLink")
        content.action = reader.action()
        content.actions = reader.buttons()
        content.category = reader.string("category")
        content.image = reader.string("image")
        content.sound = reader.string("sound")
        content.badge = reader.badge()
        content.threadId = reader.string("threadId")
        content.interruptionLevel = reader.interruptionLevel()
        content.priority = reader.priority()
        content.expiresAt = reader.date("expiresAt")
        content.collapseId = reader.string("collapseId")
        var issues = reader.issues
        var ruleIssues = content.issues(now: now, messageIdForSizeCheck: messageIdForSizeCheck)
        // A member dropped for its type would also make the message look empty: say it once.
        if !issues.isEmpty { ruleIssues.removeAll { $0.message.hasPrefix(MessageContent.emptyMessage) } }
        issues += ruleIssues
        if issues.isEmpty { return .success(content) }
        return .failure(MessageContentRejection(issues: Self.ordered(issues)))
    }

    /// Every rule broken by this content:
    /// - strings that are present are not empty; `deepLink` is a URL with a scheme; `image` an
    ///   `http(s)` URL; `collapseId` at most 64 bytes; `badge` not negative;
    /// - `action.name` non-empty, at most 128 bytes;
    /// - at most 4 `actions`, each with a non-empty, unique `id` (at most 64 bytes) and a
    ///   non-empty `title`; `placeholder` only with `input`;
    /// - buttons, an image and an interruption level need something visible (`title` or `body`);
    ///   a silent push cannot have priority high; a message says or carries something;
    /// - `expiresAt` not in the past;
    /// - the encoded payload (with a message id as long as `messageIdForSizeCheck`) fits in
    ///   `PushPayload.maxBytes` (4096).
    public func issues(
        now: Date = Date(),
        messageIdForSizeCheck: String = PushPayload.sizeCheckMessageId
    ) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        func add(_ path: String, _ message: String) { issues.append(ValidationIssue(path: path, message: message)) }
        let strings: [(String, String?)] = [
            ("title", title), ("subtitle", subtitle), ("body", body), ("deepLink", deepLink),
            ("category", category), ("image", image), ("sound", sound), ("threadId", threadId),
            ("collapseId", collapseId)
        ]
        for (path, value) in strings where value?.isEmpty == true { add(path, "must not be empty") }
        if let deepLink, !deepLink.isEmpty, !Self.hasScheme(deepLink) {
            add("deepLink", Self.deepLinkRule.problem)
        }
        if let image, !image.isEmpty, !Self.isImageURL(image) {
            add("image", Self.imageRule.problem)
        }
        if let collapseId, collapseId.utf8.count > Self.maxCollapseIdBytes {
            add("collapseId", "must be at most \(Self.maxCollapseIdBytes) bytes, it is \(collapseId.utf8.count)")
        }
        if let badge, badge < 0 { add("badge", "must not be negative") }
        if let action {
            if action.name.isEmpty { add("action.name", "must not be empty") }
            if action.name.utf8.count > 128 { add("action.name", "must be at most 128 bytes") }
        }
        if actions.count > Self.maxButtons {
            add("actions", "at most \(Self.maxButtons) buttons, got \(actions.count)")
        }
        var seen: [String: Int] = [:]
        for (index, button) in actions.enumerated() {
            let path = "actions[\(index)]"
            if button.id.isEmpty { add("\(path).id", "must not be empty") }
            if button.id.utf8.count > 64 { add("\(path).id", "must be at most 64 bytes") }
            if let first = seen[button.id], !button.id.isEmpty {
                add("\(path).id", "\(button.id) is also the id of actions[\(first)]")
            } else {
                seen[button.id] = index
            }
            if button.title.isEmpty { add("\(path).title", "must not be empty") }
            if button.placeholder != nil && !button.input { add("\(path).placeholder", "needs input: true") }
        }
        let visible = title != nil || body != nil
        if !actions.isEmpty && !visible { add("actions", "buttons need a title or body to show on") }
        if image != nil && !visible { add("image", "an image needs a title or body to show with") }
        if interruptionLevel != nil && !visible { add("interruptionLevel", "needs a title or body") }
        if isSilent && priority == .high {
            add("priority", "a silent push (no title, subtitle, body, sound or badge) must have priority normal")
        }
        if isSilent && data.isEmpty && action == nil && deepLink == nil {
            add("body", Self.emptyMessage + ": give a title, body, sound, badge or data")
        }
        if let expiresAt, expiresAt < now { add("expiresAt", "is in the past") }
        let size = PushPayload(content: self, messageId: messageIdForSizeCheck).encode().count
        if size > PushPayload.maxBytes {
            add("payload", "the push payload would be \(size) bytes; APNs accepts at most \(PushPayload.maxBytes)")
        }
        return issues
    }

    static let emptyMessage = "the message is empty"

    /// Issues in member order (as `validate` lists the members), then button index, then the
    /// order they were found in.
    private static func ordered(_ issues: [ValidationIssue]) -> [ValidationIssue] {
        let order = [
            "body", "title", "subtitle", "data", "deepLink", "action", "actions", "category", "image",
            "sound", "badge", "threadId", "interruptionLevel", "priority", "expiresAt", "collapseId",
            "payload"
        ]
        func rank(_ path: String) -> (Int, Int) {
            let head = String(path.prefix { $0 != "." && $0 != "[" })
            var index = -1
            if let open = path.firstIndex(of: "["), let close = path.firstIndex(of: "]"), open < close {
                index = Int(path[path.index(after: open)..<close]) ?? -1
            }
            return (order.firstIndex(of: head) ?? order.count, index)
        }
        return issues.enumerated().sorted { a, b in
            let (ra, rb) = (rank(a.element.path), rank(b.element.path))
            return ra != rb ? ra < rb : a.offset < b.offset
        }.map(\.element)
    }
}

/// Reads typed members of a request object, noting each type problem.
private struct MemberReader {
    let object: [String: JSONValue]
    var issues: [ValidationIssue] = []

    init(object: [String: JSONValue]) { self.object = object }

    private func present(_ key: String) -> JSONValue? {
        guard let value = object[key], !value.isNull else { return nil }
        return value
    }

    mutating func fail(_ path: String, _ message: String) {
        issues.append(ValidationIssue(path: path, message: message))
    }

    mutating func string(_ key: String) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let s) = value else {
            fail(key, "must be a string")
            return nil
        }
        return s
    }

    mutating func object(_ key: String) -> [String: JSONValue]? {
        guard let value = present(key) else { return nil }
        guard case .object(let o) = value else {
            fail(key, "must be a JSON object")
            return nil
        }
        return o
    }

    mutating func action() -> PushAction? {
        guard let value = present("action") else { return nil }
        guard case .object(let o) = value else {
            fail("action", "must be an object {name, data}")
            return nil
        }
        var data: [String: JSONValue] = [:]
        if let d = o["data"], !d.isNull {
            if case .object(let od) = d { data = od } else { fail("action.data", "must be a JSON object") }
        }
        guard case .string(let name)? = o["name"] else {
            fail("action.name", "is required and must be a string")
            return nil
        }
        return PushAction(name: name, data: data)
    }

    mutating func buttons() -> [PushButton] {
        guard let value = present("actions") else { return [] }
        guard case .array(let items) = value else {
            fail("actions", "must be an array of buttons")
            return []
        }
        var buttons: [PushButton] = []
        for (index, item) in items.enumerated() {
            let path = "actions[\(index)]"
            guard case .object(let o) = item else {
                fail(path, "must be an object {id, title, ...}")
                continue
            }
            var ok = true
            func text(_ key: String, required: Bool) -> String? {
                switch o[key] {
                case .string(let s)?: return s
                case nil, .null?:
                    if required {
                        fail("\(path).\(key)", "is required")
                        ok = false
                    }
                    return nil
                default:
                    fail("\(path).\(key)", "must be a string")
                    ok = false
                    return nil
                }
            }
            func flag(_ key: String) -> Bool {
                switch o[key] {
                case .bool(let b)?: return b
                case nil, .null?: return false
                default:
                    fail("\(path).\(key)", "must be true or false")
                    ok = false
                    return false
                }
            }
            let id = text("id", required: true)
            let title = text("title", required: true)
            let destructive = flag("destructive")
            let foreground = flag("foreground")
            let input = flag("input")
            let placeholder = text("placeholder", required: false)
            if ok, let id, let title {
                buttons.append(
                    PushButton(
                        id: id, title: title, destructive: destructive, foreground: foreground,
                        input: input, placeholder: placeholder))
            }
        }
        return buttons
    }

    mutating func badge() -> Int? {
        guard let value = present("badge") else { return nil }
        guard case .int(let i) = value, let badge = Int(exactly: i), badge <= Int(Int32.max) else {
            fail("badge", "must be an integer")
            return nil
        }
        return badge
    }

    mutating func interruptionLevel() -> InterruptionLevel? {
        guard let value = present("interruptionLevel") else { return nil }
        guard case .string(let s) = value, let level = InterruptionLevel(rawValue: s) else {
            fail("interruptionLevel", "must be one of passive, active, time-sensitive, critical")
            return nil
        }
        return level
    }

    mutating func priority() -> PushPriority? {
        guard let value = present("priority") else { return nil }
        guard let priority = PushPriority(json: value) else {
            fail("priority", "must be \"high\", \"normal\", 10 or 5")
            return nil
        }
        return priority
    }

    mutating func date(_ key: String) -> Date? {
        guard let value = present(key) else { return nil }
        guard case .string(let s) = value, let date = EventTimestamp.parse(s) else {
            fail(key, "must be an ISO 8601 date-time with an offset, such as 2025-01-31T18:00:00Z")
            return nil
        }
        return Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }
}
