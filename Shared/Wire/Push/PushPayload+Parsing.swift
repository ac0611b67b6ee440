import Foundation

/// Why a notification's payload is not a BuzzKit payload (the SDK then leaves it to the app).
public struct PushPayloadParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}

extension PushPayload {
    /// Reads a payload as a device receives it (the SDK's side of the contract).
    ///
    /// Throws only when the value is not an object or has no `bk` object (not sent by BuzzKit).
    /// Otherwise lenient, as a device must be: a member of the wrong type is ignored rather than
    /// failing the whole notification, and unknown members are ignored. `parse(encode(p)) == p`.
    public static func parse(_ value: JSONValue) throws(PushPayloadParseError) -> PushPayload {
        guard case .object(let root) = value else { throw PushPayloadParseError("the payload is not a JSON object") }
        guard case .object(let bkObject)? = root["bk"] else {
            throw PushPayloadParseError("the payload has no bk object")
        }
        let apsObject = root["aps"]?.objectValue ?? [:]
        return PushPayload(aps: parseAPS(apsObject), bk: parseBuzzKit(bkObject))
    }

    /// Parses JSON text (a recorded payload, a ledger entry).
    public static func parse(bytes: some Collection<UInt8>) throws(PushPayloadParseError) -> PushPayload {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw PushPayloadParseError("not JSON: \(error.description)")
        }
        return try parse(value)
    }

    /// Parses the `userInfo` dictionary iOS hands the app (Foundation objects from the payload).
    public static func parse(userInfo: [AnyHashable: Any]) throws(PushPayloadParseError) -> PushPayload {
        var object: [String: JSONValue] = [:]
        for (key, value) in userInfo {
            guard let key = key.base as? String else { continue }
            object[key] = JSONValue(foundationObject: value)
        }
        return try parse(.object(object))
    }

    private static func parseAPS(_ o: [String: JSONValue]) -> APS {
        var aps = APS()
        switch o["alert"] {
        case .object(let alert)?:
            aps.alert = APS.Alert(
                title: alert["title"]?.stringValue, subtitle: alert["subtitle"]?.stringValue,
                body: alert["body"]?.stringValue)
        case .string(let body)?:
            aps.alert = APS.Alert(body: body)  // APNs also allows a plain string alert
        default:
            break
        }
        aps.badge = o["badge"]?.intValue.flatMap { Int(exactly: $0) }
        aps.sound = o["sound"]?.stringValue
        aps.category = o["category"]?.stringValue
        aps.threadId = o["thread-id"]?.stringValue
        aps.mutableContent = o["mutable-content"]?.intValue == 1
        aps.contentAvailable = o["content-available"]?.intValue == 1
        aps.interruptionLevel = o["interruption-level"]?.stringValue.flatMap(InterruptionLevel.init(rawValue:))
        return aps
    }

    private static func parseBuzzKit(_ o: [String: JSONValue]) -> BuzzKit {
        var bk = BuzzKit()
        bk.messageId = o["messageId"]?.stringValue
        bk.deepLink = o["deepLink"]?.stringValue
        if case .object(let action)? = o["action"], let name = action["name"]?.stringValue {
            bk.action = PushAction(name: name, data: action["data"]?.objectValue ?? [:])
        }
        bk.actions = (o["actions"]?.arrayValue ?? []).compactMap { item -> PushButton? in
            guard case .object(let b) = item, let id = b["id"]?.stringValue, let title = b["title"]?.stringValue else {
                return nil
            }
            return PushButton(
                id: id, title: title, destructive: b["destructive"]?.boolValue ?? false,
                foreground: b["foreground"]?.boolValue ?? false, input: b["input"]?.boolValue ?? false,
                placeholder: b["placeholder"]?.stringValue)
        }
        bk.image = o["image"]?.stringValue
        bk.category = o["category"]?.stringValue
        bk.data = o["data"]?.objectValue ?? [:]
        if let local = o["local"] { bk.local = LocalPlan(json: local) }
        if case .object(let cancel)? = o["cancel"], let runId = cancel["runId"]?.stringValue {
            bk.cancel = CancelPlan(runId: runId)
        }
        return bk
    }
}

extension JSONValue {
    /// A Foundation object graph (as `JSONSerialization` or iOS's `userInfo` produce it) as a
    /// JSON value; anything that has no JSON form becomes `null`. `NSNumber` booleans stay
    /// booleans, integral numbers stay integers.
    init(foundationObject value: Any) {
        switch value {
        case let s as String: self = .string(s)
        case is NSNull: self = .null
        case let n as NSNumber
        where type(of: value) == NSNumber.self || !(value is Bool || value is Int || value is Double):
            self = JSONValue(number: n)
        case let b as Bool where type(of: value) == Bool.self: self = .bool(b)
        case let i as Int where type(of: value) == Int.self: self = .int(Int64(i))
        case let i as Int64 where type(of: value) == Int64.self: self = .int(i)
        case let d as Double where type(of: value) == Double.self: self = .double(d)
        case let n as NSNumber: self = JSONValue(number: n)
        case let a as [Any]: self = .array(a.map(JSONValue.init(foundationObject:)))
        case let o as [String: Any]: self = .object(o.mapValues(JSONValue.init(foundationObject:)))
        case let o as [AnyHashable: Any]:
            var object: [String: JSONValue] = [:]
            for (key, element) in o {
                if let key = key.base as? String { object[key] = JSONValue(foundationObject: element) }
            }
            self = .object(object)
        default: self = .null
        }
    }

    private init(number n: NSNumber) {
        let type = String(cString: n.objCType)
        if type == "c" || type == "B" {
            self = .bool(n.boolValue)
        } else if type == "d" || type == "f" {
            let d = n.doubleValue
            self = .double(d)
        } else {
            self = .int(n.int64Value)
        }
    }
}
