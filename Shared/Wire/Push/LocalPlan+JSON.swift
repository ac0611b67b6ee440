/// A plan as `bk.local` carries it, as a JSON value: what a workflow's `local_plan` message stores
/// as its content (`{"local": ...}`), so the sender rebuilds the exact silent push from the row.
extension LocalPlan {
    /// `{id, at: {year, month, day, hour, minute, second?}, title?, body?, data?, deepLink?,
    /// cancelOn?, messageId?}`: the members `PushPayload.encode()` writes under `bk.local`, absent
    /// ones left out the same way.
    public var jsonValue: JSONValue {
        var at: [String: JSONValue] = [
            "year": .int(Int64(fireAt.year)), "month": .int(Int64(fireAt.month)), "day": .int(Int64(fireAt.day)),
            "hour": .int(Int64(fireAt.hour)), "minute": .int(Int64(fireAt.minute))
        ]
        if fireAt.second != 0 { at["second"] = .int(Int64(fireAt.second)) }
        var o: [String: JSONValue] = ["id": .string(id), "at": .object(at)]
        if let title { o["title"] = .string(title) }
        if let body { o["body"] = .string(body) }
        if !data.isEmpty { o["data"] = .object(data) }
        if let deepLink { o["deepLink"] = .string(deepLink) }
        if !cancelOn.isEmpty { o["cancelOn"] = .array(cancelOn.map(JSONValue.string)) }
        if let messageId { o["messageId"] = .string(messageId) }
        return .object(o)
    }

    /// Reads `bk.local` (or `jsonValue`) back; nil without an `id` or a complete `at` (every
    /// component but `second` is required).
    public init?(json: JSONValue) {
        guard case .object(let o) = json, let id = o["id"]?.stringValue, case .object(let at)? = o["at"] else {
            return nil
        }
        func component(_ key: String) -> Int? { at[key]?.intValue.flatMap { Int(exactly: $0) } }
        guard let year = component("year"), let month = component("month"), let day = component("day"),
            let hour = component("hour"), let minute = component("minute")
        else { return nil }
        self.init(
            id: id,
            fireAt: FireDate(
                year: year, month: month, day: day, hour: hour, minute: minute, second: component("second") ?? 0),
            title: o["title"]?.stringValue, body: o["body"]?.stringValue, data: o["data"]?.objectValue ?? [:],
            deepLink: o["deepLink"]?.stringValue, cancelOn: (o["cancelOn"]?.arrayValue ?? []).compactMap(\.stringValue),
            messageId: o["messageId"]?.stringValue)
    }
}
