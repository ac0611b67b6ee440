import BuzzKitContracts
import BuzzKitCrypto
import BuzzKitHTTPServer
import BuzzKitRedis
import BuzzKitWire
import Foundation

/// `POST /v1/live-activities/send`: start, update or end a Live Activity from the backend, with
/// one APNs result per token in the answer.
///
/// The gateway validates the request, puts it on `bk:la` with this replica's reply list and a
/// reply id, and waits for the liveactivity service's answer (`LiveActivityReplies`: one reader
/// for all of the replica's sends) until the deadline (`liveActivityDeadline`, default 5 s): then
/// `504 upstream_timeout`, while the work still completes and is visible in the ledger
/// (`GET /v1/messages/{id}`, whose id the 504's `details.messageId` names). The message id is
/// derived from the `Idempotency-Key` when there is one, so a retry after a 504 is answered from
/// the ledger, not sent again. A request without an `Idempotency-Key` runs without a task (the
/// route's deferred handler); one with it runs as a task, for the key's claim.
enum LiveActivitySendRoutes {
    static let priorities = ["high", "normal"]
    /// A result's `status`: a decided outcome, or `sending` when a replica that took a dead one's
    /// request over finds its deliveries still claimed.
    static let resultStatuses = LiveActivityResult.Status.allCases.map(\.rawValue)

    static let rules = [
        "update and end need activityId and take neither attributesType nor attributes",
        "start needs attributesType and alert (Apple shows it) and takes no activityId"
    ]

    /// The request and answer shapes, named so a client generator makes a type of each.
    static var components: [String: JSONValue] {
        [
            "LiveActivitySendRequest": body, "LiveActivityAlert": alert,
            "LiveActivitySendResult": result, "LiveActivitySendResponse": response
        ]
    }

    static let alert = Schema.object(
        [
            "title": Schema.nullable(Schema.string(.length(1, 1000))),
            "body": Schema.nullable(Schema.string(.length(1, 1000))),
            "sound": Schema.nullable(Schema.string(.length(1, 256)))
        ],
        description: "A banner with the update; required on start")

    /// The request; its rules across members (`rules`) are JSON Schema conditionals on `event`.
    static var body: JSONValue {
        let n = Schema.nullable
        let body = Schema.object(
            [
                "to": Schema.string(FieldRules.identifierRule, "the subscriber's id"),
                "event": Schema.string(enumeration: LiveActivitySendRequest.Event.allCases.map(\.rawValue)),
                "activityId": n(
                    Schema.string(FieldRules.activityIDRule, "update, end: the Activity.id the SDK registered")),
                "attributesType": n(
                    Schema.string(FieldRules.attributesTypeRule, "start: the attributes type (push-to-start tokens)")),
                "attributes": n(Schema.object([:], additional: true, description: "start: the static attributes")),
                "contentState": Schema.object(
                    [:], additional: true, description: "the new content state (ContentState's keys)"),
                "alert": n(Schema.ref("LiveActivityAlert")),
                "staleDate": n(
                    Schema.string("when the content goes stale (RFC 3339 with an offset)", format: "date-time")),
                "dismissalDate": n(
                    Schema.string("when the ended tile disappears (RFC 3339 with an offset)", format: "date-time")),
                "priority": n(Schema.string(enumeration: priorities)),
                "timestamp": n([
                    "type": "integer", "minimum": 0, "maximum": 100_000_000_000,
                    "description": "the update's time in epoch seconds; default now"
                ])
            ], required: ["to", "event", "contentState"])
        let given = Schema.given
        let start: JSONValue = [
            "if": ["properties": ["event": ["const": "start"]]],
            "then": [
                "allOf": [given("attributesType"), given("alert")],
                "properties": ["activityId": ["type": "null"]]
            ],
            "else": [
                "allOf": [given("activityId")],
                "properties": ["attributesType": ["type": "null"], "attributes": ["type": "null"]]
            ]
        ]
        return Schema.adding(["allOf": [start], "x-rules": .array(rules.map(JSONValue.string))], to: body)
    }

    static let result = Schema.object(
        [
            "activityId": Schema.nullable(Schema.string(FieldRules.activityIDRule)),
            "attributesType": Schema.nullable(Schema.string(FieldRules.attributesTypeRule)),
            "token": Schema.string(FieldRules.liveActivityTokenRule),
            "deliveryId": Schema.nullable(Schema.uuid),
            "status": Schema.string(enumeration: resultStatuses),
            "apnsStatus": Schema.nullable(Schema.integer),
            "reason": Schema.nullable(Schema.string()),
            "apnsId": Schema.nullable(Schema.string())
        ], description: "One token's APNs result")

    static let response = Schema.object(
        [
            "messageId": Schema.nullable(Schema.uuid),
            "event": Schema.string(enumeration: LiveActivitySendRequest.Event.allCases.map(\.rawValue)),
            "results": Schema.array(Schema.ref("LiveActivitySendResult"))
        ], required: ["messageId", "event", "results"])

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "POST", "/v1/live-activities/send", id: "sendLiveActivity",
                "Start, update or end a Live Activity; one APNs result per token (504 upstream_timeout past the deadline, the send still completes)",
                access: .tenant(.messagesSend, clientKeys: false), body: Schema.ref("LiveActivitySendRequest"),
                response: Schema.ref("LiveActivitySendResponse"),
                errors: [.liveActivityNotFound, .noPushToStartToken, .upstreamTimeout],
                handler: { g, c in try await g.sendLiveActivity(c) },
                deferred: { g, c, done in g.sendLiveActivity(c, done) })
        ]
    }

    /// The request's fields, every problem at once.
    static func validate(_ body: JSONValue?, now: Date) throws(APIError) -> LiveActivitySendRequest {
        var v = Validator(
            body,
            allowed: [
                "to", "event", "activityId", "attributesType", "attributes", "contentState", "alert",
                "staleDate", "dismissalDate", "priority", "timestamp"
            ])
        let to = v.string("to", required: true, rule: FieldRules.identifierRule)
        let event = v.oneOf("event", LiveActivitySendRequest.Event.allCases.map(\.rawValue), required: true)
            .flatMap(LiveActivitySendRequest.Event.init(rawValue:))
        let activityId = v.string("activityId", rule: FieldRules.activityIDRule)
        let type = v.string("attributesType", rule: FieldRules.attributesTypeRule)
        let attributes = v.object("attributes")
        let contentState = v.object("contentState", required: true)
        let alert = v.object("alert")
        if let alert {
            var a = Validator(alert, allowed: ["title", "body", "sound"], prefix: "alert.")
            _ = a.string("title", rule: .length(1, 1000))
            _ = a.string("body", rule: .length(1, 1000))
            _ = a.string("sound", rule: .length(1, 256))
            v.merge(a)
        }
        let stale = date(&v, "staleDate")
        let dismissal = date(&v, "dismissalDate")
        let priority = v.oneOf("priority", priorities)
        var timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
        if let value = body?["timestamp"], !value.isNull {
            if let seconds = value.intValue, value.doubleValue == Double(seconds),
                (0...100_000_000_000).contains(seconds)
            {
                timestamp = seconds
            } else {
                v.add("timestamp", "must be an integer of epoch seconds from 0 to 100000000000")
            }
        }
        // The rules across fields (x-rules); null counts as absent, and a field already refused is not refused twice.
        func given(_ name: String) -> Bool { v.has(name) && !v.isNull(name) }
        func require(_ name: String, _ message: String) {
            if !given(name) { v.add(name, message) }
        }
        func refuse(_ name: String, _ message: String) {
            if given(name) && !v.issues.contains(where: { $0.path == name }) { v.add(name, message) }
        }
        switch event {
        case .start:
            require("attributesType", "is required for start")
            require("alert", "is required for start (Apple shows it)")
            refuse("activityId", "is not allowed for start (the new activity reports its id)")
        case .update, .end:
            require("activityId", "is required for update and end")
            refuse("attributesType", "is only for start")
            refuse("attributes", "is only for start")
        case nil:
            break
        }
        try v.check()
        guard let to, let event, let contentState else { throw APIError.internalError }
        return LiveActivitySendRequest(
            to: to, event: event, activityId: activityId, attributesType: type,
            attributes: attributes, contentState: contentState, alert: alert,
            staleDate: stale, dismissalDate: dismissal, priority: priority == "normal" ? 5 : 10,
            timestamp: timestamp)
    }

    private static func date(_ v: inout Validator, _ name: String) -> Int64? {
        guard let text = v.string(name, rule: .length(1, 256)) else { return nil }
        guard let date = EventTimestamp.parse(text) else {
            v.add(name, "must be an ISO 8601 date-time with an offset, such as 2025-01-31T18:00:00Z")
            return nil
        }
        return Int64(date.timeIntervalSince1970.rounded(.down))
    }

    /// The message id of a request: from the tenant and its `Idempotency-Key` (a retry is the same
    /// message), else a new one.
    static func messageId(tenant: UUID, idempotencyKey: String?) -> UUID {
        guard let key = idempotencyKey else { return UUID.timeOrdered() }
        var digest = Digest.sha256(Array(("bk:la:" + tenant.lowercasedText + ":" + key).utf8))
        digest[6] = (digest[6] & 0x0F) | 0x50  // version 5-like (name-based), RFC 4122 variant
        digest[8] = (digest[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
                digest[8], digest[9], digest[10], digest[11], digest[12], digest[13], digest[14], digest[15]
            ))
    }
}

extension Gateway {
    /// The route as a task (a request with an `Idempotency-Key`, whose claim is async).
    func sendLiveActivity(_ context: RequestContext) async throws -> Response {
        try await withCheckedThrowingContinuation { continuation in
            sendLiveActivity(context) { continuation.resume(with: $0) }
        }
    }

    /// The route without a task: validated on the network thread, queued on `bk:la` from a
    /// pooled Redis connection's thread, answered from `LiveActivityReplies`' reader thread.
    func sendLiveActivity(_ context: RequestContext, _ done: @escaping @Sendable (Result<Response, any Error>) -> Void)
    {
        let entry: LiveActivityEntry
        do {
            let request = try LiveActivitySendRoutes.validate(try context.request.jsonBody(), now: Date())
            let messageId = LiveActivitySendRoutes.messageId(
                tenant: try context.tenant, idempotencyKey: context.request.headers[Idempotency.header])
            entry = LiveActivityEntry(
                tenantId: try context.tenant, messageId: messageId, replyKey: liveActivityReplies.key,
                replyId: liveActivityReplies.makeReplyId(), request: request)
        } catch {
            return done(.failure(error))
        }
        let replyId = entry.replyId ?? ""
        liveActivityReplies.wait(replyId, deadline: configuration.liveActivityDeadline) { reply in
            done(LiveActivitySendRoutes.response(reply, entry))
        }
        var xadd: [RedisArgument] = ["XADD", RedisArgument(configuration.liveActivityStream.rawValue), "*"]
        for (name, value) in entry.fields { xadd += [RedisArgument(name), RedisArgument(bytes: value)] }
        redis.command(xadd) { [liveActivityReplies] result in
            if case .failure(let error) = result, liveActivityReplies.cancel(replyId) { done(.failure(error)) }
        }
    }
}

extension LiveActivitySendRoutes {
    /// The HTTP answer to `entry` for the liveactivity service's `reply`; nil (the deadline
    /// passed) is 504 `upstream_timeout` naming the message, which still completes.
    static func response(_ reply: LiveActivityReply?, _ entry: LiveActivityEntry) -> Result<Response, any Error> {
        switch reply {
        case nil:
            return .failure(
                APIError(
                    .upstreamTimeout, "the Live Activity send did not answer within its deadline; it still completes",
                    details: ["messageId": .string(entry.messageId.lowercasedText)]))
        case .error(let code, let message):
            let known = ErrorCode.all.first { $0.rawValue == code } ?? .internalError
            return .failure(APIError(known, message))
        case .results(let id, let results):
            return .success(
                .json([
                    "messageId": id.map { .string($0.lowercasedText) } ?? .null,
                    "event": .string(entry.request.event.rawValue), "results": .array(results.map(\.json))
                ]))
        }
    }
}
