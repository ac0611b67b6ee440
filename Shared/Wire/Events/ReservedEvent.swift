/// An event the SDK emits on its own (names start with `$`), with the data fields it documents.
///
/// One list shared by the server (validation on `POST /v1/events`) and the iOS SDK (what it
/// emits), so the two cannot drift. A `$` event is accepted only when its name is in `all`, every
/// `required` field is present with the right type, and every other field is one of `optional`
/// (an optional field may also be JSON `null`). Unknown `$` names and unknown fields are rejected.
///
/// Required vs optional follows what the SDK always knows when it emits the event: a receipt always
/// has its `messageId`; an open only sometimes has an `action`, `input` or `deepLink`; a local
/// notification or a routed deep link may come from something other than a BuzzKit message.
public struct ReservedEvent: Sendable, Hashable {
    /// The JSON type a field must have.
    public enum FieldType: String, Sendable, Hashable {
        case string
        /// An integer or a float.
        case number
        case bool
    }

    public struct Field: Sendable, Hashable {
        public var name: String
        public var type: FieldType
        public var required: Bool
        /// When non-empty, the only values a string field may take.
        public var allowedValues: [String]

        public init(_ name: String, _ type: FieldType, required: Bool, allowedValues: [String] = []) {
            self.name = name
            self.type = type
            self.required = required
            self.allowedValues = allowedValues
        }
    }

    public var name: String
    public var fields: [Field]

    public init(_ name: String, _ fields: [Field]) {
        self.name = name
        self.fields = fields
    }

    /// The receipt kind (`delivered`, `opened`, `dismissed`) for the three notification receipts,
    /// counted per message by the ingest service; nil for every other event.
    public var receiptKind: String? { Self.receiptKinds[name] }

    public static let receiptKinds: [String: String] = [
        ReservedEvent.notificationDelivered: "delivered",
        ReservedEvent.notificationOpened: "opened",
        ReservedEvent.notificationDismissed: "dismissed"
    ]
}

// MARK: - The list (the events seed's "Reserved events" table)

extension ReservedEvent {
    public static let appInstalled = "$app.installed"
    public static let appUpdated = "$app.updated"
    public static let appOpened = "$app.opened"
    public static let appBackgrounded = "$app.backgrounded"
    public static let sessionEnded = "$session.ended"
    public static let notificationDelivered = "$notification.delivered"
    public static let notificationOpened = "$notification.opened"
    public static let notificationDismissed = "$notification.dismissed"
    public static let localScheduled = "$local.scheduled"
    public static let deeplinkOpened = "$deeplink.opened"
    public static let actionTriggered = "$action.triggered"
    public static let permissionChanged = "$permission.changed"
    public static let activityStarted = "$activity.started"
    public static let activityEnded = "$activity.ended"
    public static let activityDismissed = "$activity.dismissed"
    public static let activityStale = "$activity.stale"

    private static func req(_ name: String, _ type: FieldType, allowed: [String] = []) -> Field {
        Field(name, type, required: true, allowedValues: allowed)
    }
    private static func opt(_ name: String, _ type: FieldType) -> Field { Field(name, type, required: false) }

    private static let activityFields = [req("activityId", .string), req("attributesType", .string)]

    /// Every reserved event, in the order of the seed's table.
    public static let all: [ReservedEvent] = [
        ReservedEvent(appInstalled, [req("version", .string), req("build", .string)]),
        ReservedEvent(
            appUpdated,
            [
                req("fromVersion", .string), req("toVersion", .string),
                req("fromBuild", .string), req("toBuild", .string)
            ]),
        ReservedEvent(appOpened, []),
        ReservedEvent(appBackgrounded, []),
        ReservedEvent(sessionEnded, [req("durationSec", .number)]),
        ReservedEvent(notificationDelivered, [req("messageId", .string)]),
        ReservedEvent(
            notificationOpened,
            [
                req("messageId", .string), opt("action", .string),
                opt("input", .string), opt("deepLink", .string)
            ]),
        ReservedEvent(notificationDismissed, [req("messageId", .string)]),
        ReservedEvent(localScheduled, [req("localId", .string), opt("messageId", .string)]),
        ReservedEvent(
            deeplinkOpened,
            [
                req("url", .string), req("via", .string, allowed: ["delegate", "handler", "system"]),
                opt("messageId", .string)
            ]),
        ReservedEvent(actionTriggered, [req("name", .string), req("handled", .bool), opt("messageId", .string)]),
        ReservedEvent(permissionChanged, [req("status", .string)]),
        ReservedEvent(activityStarted, activityFields),
        ReservedEvent(activityEnded, activityFields),
        ReservedEvent(activityDismissed, activityFields),
        ReservedEvent(activityStale, activityFields)
    ]

    private static let byName: [String: ReservedEvent] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The reserved event called `name`, or nil when there is none.
    public static func named(_ name: String) -> ReservedEvent? { byName[name] }
}

// MARK: - Checking data

extension ReservedEvent {
    /// The problems with `data` for this event: `(field, message)` pairs, empty when it is valid.
    public func problems(in data: [String: JSONValue]) -> [(field: String, message: String)] {
        var problems: [(field: String, message: String)] = []
        for field in fields {
            guard let value = data[field.name], !(value.isNull && !field.required) else {
                if field.required { problems.append(("data.\(field.name)", "\(name) requires \(field.name)")) }
                continue
            }
            if !field.accepts(value) {
                problems.append(("data.\(field.name)", "\(field.name) must be \(field.expectation)"))
            }
        }
        let known = Set(fields.map(\.name))
        for key in data.keys.sorted() where !known.contains(key) {
            let allowed = fields.isEmpty ? "no data fields" : "only " + fields.map(\.name).joined(separator: ", ")
            problems.append(("data.\(key)", "\(name) does not take \(key) (it takes \(allowed))"))
        }
        return problems
    }
}

extension ReservedEvent.Field {
    func accepts(_ value: JSONValue) -> Bool {
        switch (type, value) {
        case (.string, .string(let s)): return allowedValues.isEmpty || allowedValues.contains(s)
        case (.number, .int), (.number, .double): return true
        case (.bool, .bool): return true
        default: return false
        }
    }

    var expectation: String {
        switch type {
        case .string where !allowedValues.isEmpty: return "one of " + allowedValues.joined(separator: ", ")
        case .string: return "a string"
        case .number: return "a number"
        case .bool: return "a boolean"
        }
    }
}
