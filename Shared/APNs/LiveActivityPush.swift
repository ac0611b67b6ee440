import BuzzKitWire
import Foundation

/// One Live Activity push (start, update or end) as APNs receives it: push type `liveactivity`,
/// topic `<bundle id>.push-type.liveactivity`, and the `aps` members ActivityKit reads. Pure data
/// and bytes, no socket: the liveactivity service builds one per token.
///
/// ```json
/// {"aps": {"timestamp": 1767225600, "event": "update", "content-state": {"score": 3},
///          "stale-date": 1767229200, "dismissal-date": 1767232800,
///          "alert": {"title": "Goal", "body": "2-1", "sound": "default"},
///          "attributes-type": "MatchAttributes", "attributes": {"matchId": "m_1"}, "input-push-token": 1}}
/// ```
/// `attributes-type`, `attributes` and `input-push-token` (so the new activity reports its push
/// token) are sent for `start` only; `stale-date`, `dismissal-date` and `alert` when given.
public struct LiveActivityPush: Sendable, Hashable {
    public enum Event: String, Sendable, Hashable, CaseIterable {
        case start, update, end
    }

    /// The banner shown with the update (`alert` in `aps`; Apple requires one on `start`).
    public struct Alert: Sendable, Hashable {
        public var title: String?
        public var body: String?
        public var sound: String?

        public init(title: String? = nil, body: String? = nil, sound: String? = nil) {
            self.title = title
            self.body = body
            self.sound = sound
        }
    }

    public var event: Event
    /// Epoch seconds; iOS ignores an update older than one it already applied.
    public var timestamp: Int64
    public var contentState: JSONValue
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    public var alert: Alert?
    /// `start` only.
    public var attributesType: String?
    /// `start` only.
    public var attributes: JSONValue?
    /// `apns-priority`: 10 (`high`, the default) or 5 (`normal`).
    public var priority: Int

    public init(
        event: Event, timestamp: Int64, contentState: JSONValue, staleDate: Int64? = nil,
        dismissalDate: Int64? = nil, alert: Alert? = nil, attributesType: String? = nil,
        attributes: JSONValue? = nil, priority: Int = 10
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.alert = alert
        self.attributesType = attributesType
        self.attributes = attributes
        self.priority = priority
    }

    /// `<bundle id>.push-type.liveactivity`: the topic APNs requires for push type `liveactivity`
    /// (a Live Activity push to the bare bundle id is refused with `DeviceTokenNotForTopic`).
    public static func topic(bundleId: String) -> String { bundleId + ".push-type.liveactivity" }

    /// The `aps` object.
    public var aps: JSONValue {
        var aps: [String: JSONValue] = [
            "timestamp": .int(timestamp), "event": .string(event.rawValue), "content-state": contentState
        ]
        if let staleDate { aps["stale-date"] = .int(staleDate) }
        if let dismissalDate { aps["dismissal-date"] = .int(dismissalDate) }
        if let alert {
            var members: [String: JSONValue] = [:]
            if let title = alert.title { members["title"] = .string(title) }
            if let body = alert.body { members["body"] = .string(body) }
            if let sound = alert.sound { members["sound"] = .string(sound) }
            aps["alert"] = .object(members)
        }
        if event == .start {
            if let attributesType { aps["attributes-type"] = .string(attributesType) }
            aps["attributes"] = attributes ?? .object([:])
            aps["input-push-token"] = .int(1)
        }
        return .object(aps)
    }

    /// The payload bytes sent: `{"aps": ...}`.
    public func encode() -> [UInt8] { JSONValue.object(["aps": aps]).jsonBytes }

    /// The APNs request to one token (activity push token or push-to-start token).
    public func request(deviceToken: String, bundleId: String, apnsId: String? = nil) -> APNsRequest {
        APNsRequest(
            deviceToken: deviceToken, topic: Self.topic(bundleId: bundleId), pushType: .liveactivity,
            priority: priority, apnsId: apnsId, payload: encode())
    }
}
