import BuzzKitRedis
import BuzzKitWire
import Foundation

/// One `POST /v1/live-activities/send` on `bk:la` (gateway → liveactivity), with the key its
/// answer goes to.
///
/// Fields: `v` (`1`), `tenant` (uuid), `message` (uuid: the message row the send becomes; the same
/// for a retry with the same `Idempotency-Key`, so a retried request is answered from the ledger
/// instead of sent twice), `reply` (the Redis list the answer goes to), `replyId` (optional: which
/// of the requests waiting on that list this is), `request` (the validated request,
/// `LiveActivitySendRequest.json`).
///
/// The liveactivity service reads it in the consumer group `liveactivity` (every replica shares
/// it; an entry held by a replica that died is claimed by another after the claim idle time) and
/// answers with `LiveActivityReply` on `reply` (`LPUSH`, the list expiring after `replyTTL`),
/// carrying `replyId` when the entry has one (`replyBytes`). A gateway replica waits for all its
/// requests' answers on one list of its own (`bk:la:reply:<replica>`, one reader, each answer
/// matched to its request by `replyId`); without `replyId` the list is the request's own. An
/// answer nobody waits for any more (the deadline passed: 504 `upstream_timeout`) is dropped or
/// expires; the work it describes is in the ledger.
public struct LiveActivityEntry: Sendable, Hashable {
    public var tenantId: UUID
    public var messageId: UUID
    public var replyKey: String
    /// Which request waiting on `replyKey` this is (nil: the list is this request's alone).
    public var replyId: String?
    public var request: LiveActivitySendRequest

    public init(
        tenantId: UUID, messageId: UUID, replyKey: String, replyId: String? = nil, request: LiveActivitySendRequest
    ) {
        self.tenantId = tenantId
        self.messageId = messageId
        self.replyKey = replyKey
        self.replyId = replyId
        self.request = request
    }

    static let version = "1"
    /// How long an answer waits in Redis for its reader.
    public static let replyTTL: Duration = .seconds(60)

    /// A fresh reply key: `bk:la:reply:<uuid>` (one per HTTP request, even for a retry).
    public static func makeReplyKey(prefix: String = "bk:la:reply:") -> String {
        prefix + UUID().uuidString.lowercased()
    }

    public var fields: [(String, [UInt8])] {
        var fields: [(String, [UInt8])] = [
            ("v", Array(Self.version.utf8)), ("tenant", Array(tenantId.lowercasedText.utf8)),
            ("message", Array(messageId.lowercasedText.utf8)), ("reply", Array(replyKey.utf8))
        ]
        if let replyId { fields.append(("replyId", Array(replyId.utf8))) }
        fields.append(("request", request.json.jsonBytes))
        return fields
    }

    /// The answer as it goes on `replyKey`: the reply's JSON, with `replyId` when the entry has one.
    public func replyBytes(_ reply: LiveActivityReply) -> [UInt8] {
        guard let replyId, case .object(var members) = reply.json else { return reply.json.jsonBytes }
        members["replyId"] = .string(replyId)
        return JSONValue.object(members).jsonBytes
    }

    public init(entry: StreamEntry) throws(StreamContractError) {
        guard entry.string("v") == Self.version else { throw StreamContractError("bk:la", "unsupported entry version") }
        guard let tenant = entry.string("tenant").flatMap(UUID.init(uuidText:)),
            let message = entry.string("message").flatMap(UUID.init(uuidText:)),
            let reply = entry.string("reply"), !reply.isEmpty,
            let text = entry.string("request"), let json = try? JSONValue.parse(Array(text.utf8)),
            let request = LiveActivitySendRequest(json: json)
        else { throw StreamContractError("bk:la", "missing or invalid tenant, message, reply or request") }
        self.init(
            tenantId: tenant, messageId: message, replyKey: reply, replyId: entry.string("replyId"), request: request)
    }
}

extension ConsumerGroup {
    /// The liveactivity service's group on `bk:la`.
    public static let liveActivity = "liveactivity"
}

/// A validated Live Activity send (the fields of the seed's table), as the gateway checked it.
public struct LiveActivitySendRequest: Sendable, Hashable {
    public enum Event: String, Sendable, Hashable, CaseIterable {
        case start, update, end
    }

    public var to: String
    public var event: Event
    /// update, end.
    public var activityId: String?
    /// start.
    public var attributesType: String?
    public var attributes: JSONValue?
    public var contentState: JSONValue
    /// `{title, body, sound}` as given.
    public var alert: JSONValue?
    /// Epoch seconds.
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    /// 10 (`high`, default) or 5 (`normal`).
    public var priority: Int
    /// Epoch seconds (default: when the gateway took the request).
    public var timestamp: Int64

    public init(
        to: String, event: Event, activityId: String? = nil, attributesType: String? = nil,
        attributes: JSONValue? = nil, contentState: JSONValue, alert: JSONValue? = nil, staleDate: Int64? = nil,
        dismissalDate: Int64? = nil, priority: Int = 10, timestamp: Int64
    ) {
        self.to = to
        self.event = event
        self.activityId = activityId
        self.attributesType = attributesType
        self.attributes = attributes
        self.contentState = contentState
        self.alert = alert
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.priority = priority
        self.timestamp = timestamp
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "to": .string(to), "event": .string(event.rawValue), "contentState": contentState,
            "priority": .int(Int64(priority)), "timestamp": .int(timestamp)
        ]
        if let activityId { o["activityId"] = .string(activityId) }
        if let attributesType { o["attributesType"] = .string(attributesType) }
        if let attributes { o["attributes"] = attributes }
        if let alert { o["alert"] = alert }
        if let staleDate { o["staleDate"] = .int(staleDate) }
        if let dismissalDate { o["dismissalDate"] = .int(dismissalDate) }
        return .object(o)
    }

    public init?(json: JSONValue) {
        guard let to = json["to"]?.stringValue, let event = json["event"]?.stringValue.flatMap(Event.init(rawValue:)),
            let contentState = json["contentState"], let priority = json["priority"]?.intValue,
            let timestamp = json["timestamp"]?.intValue
        else { return nil }
        self.init(
            to: to, event: event, activityId: json["activityId"]?.stringValue,
            attributesType: json["attributesType"]?.stringValue, attributes: json["attributes"],
            contentState: contentState, alert: json["alert"], staleDate: json["staleDate"]?.intValue,
            dismissalDate: json["dismissalDate"]?.intValue, priority: Int(priority), timestamp: timestamp)
    }
}

/// The liveactivity service's answer to one `LiveActivityEntry`: one result per token, or the
/// error the request ends in (`live_activity_not_found`, `no_push_to_start_token`).
public enum LiveActivityReply: Sendable, Hashable {
    case results(messageId: UUID?, [LiveActivityResult])
    case error(code: String, message: String)

    public var json: JSONValue {
        switch self {
        case .results(let messageId, let results):
            [
                "ok": true, "messageId": messageId.map { .string($0.lowercasedText) } ?? .null,
                "results": .array(results.map(\.json))
            ]
        case .error(let code, let message):
            ["ok": false, "code": .string(code), "message": .string(message)]
        }
    }

    public init?(json: JSONValue) {
        if json["ok"]?.boolValue == true {
            guard let results = json["results"]?.arrayValue else { return nil }
            let parsed = results.compactMap(LiveActivityResult.init(json:))
            guard parsed.count == results.count else { return nil }
            self = .results(messageId: json["messageId"]?.stringValue.flatMap(UUID.init(uuidText:)), parsed)
        } else {
            guard let code = json["code"]?.stringValue else { return nil }
            self = .error(code: code, message: json["message"]?.stringValue ?? "")
        }
    }
}

/// What happened for one token of a Live Activity send.
public struct LiveActivityResult: Sendable, Hashable {
    /// The token's outcome, one vocabulary for the answer, the ledger's replay and the API.
    ///
    /// Sent or tried: `sent` (APNs accepted it), `failed` (APNs refused it or could not be
    /// reached: `reason`; or the replica sending it stopped before recording it), `invalidToken`
    /// (APNs said the token is dead: marked invalid, never used again unless registered again),
    /// `sending` (a replay while the replica that decided it has not recorded it yet). Not sent
    /// at all: `activityEnded` (the activity ended: nothing pushes to it), `staleTimestamp` (older
    /// than the last update sent to it; iOS would drop it), `tokenInvalid` (APNs refused this
    /// token before).
    public enum Status: String, Sendable, Hashable, CaseIterable {
        case sent
        case failed
        case invalidToken = "invalid_token"
        case sending
        case activityEnded = "activity_ended"
        case staleTimestamp = "stale_timestamp"
        case tokenInvalid = "token_invalid"

        /// A delivery's status as a token's result (`queued` cannot occur: a Live Activity's
        /// chunk is claimed when it is written; read as `sending`; `expired` as `failed`).
        public init(_ delivery: DeliveryStatus) {
            switch delivery {
            case .sent: self = .sent
            case .invalidToken: self = .invalidToken
            case .queued, .sending: self = .sending
            case .failed, .expired, .suppressed: self = .failed
            }
        }
    }

    public var activityId: String?
    public var attributesType: String?
    public var token: String
    public var deliveryId: UUID?
    public var status: Status
    public var apnsStatus: Int?
    public var reason: String?
    public var apnsId: String?

    public init(
        activityId: String?, attributesType: String?, token: String, deliveryId: UUID?, status: Status,
        apnsStatus: Int? = nil, reason: String? = nil, apnsId: String? = nil
    ) {
        self.activityId = activityId
        self.attributesType = attributesType
        self.token = token
        self.deliveryId = deliveryId
        self.status = status
        self.apnsStatus = apnsStatus
        self.reason = reason
        self.apnsId = apnsId
    }

    public var json: JSONValue {
        [
            "activityId": activityId.map(JSONValue.string) ?? .null,
            "attributesType": attributesType.map(JSONValue.string) ?? .null,
            "token": .string(token), "deliveryId": deliveryId.map { .string($0.lowercasedText) } ?? .null,
            "status": .string(status.rawValue), "apnsStatus": apnsStatus.map { .int(Int64($0)) } ?? .null,
            "reason": reason.map(JSONValue.string) ?? .null, "apnsId": apnsId.map(JSONValue.string) ?? .null
        ]
    }

    public init?(json: JSONValue) {
        guard let token = json["token"]?.stringValue,
            let status = json["status"]?.stringValue.flatMap(Status.init(rawValue:))
        else { return nil }
        self.init(
            activityId: json["activityId"]?.stringValue, attributesType: json["attributesType"]?.stringValue,
            token: token, deliveryId: json["deliveryId"]?.stringValue.flatMap(UUID.init(uuidText:)), status: status,
            apnsStatus: json["apnsStatus"]?.intValue.map { Int($0) }, reason: json["reason"]?.stringValue,
            apnsId: json["apnsId"]?.stringValue)
    }
}
