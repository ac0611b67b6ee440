import BuzzKitContracts
import BuzzKitHTTPServer
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The Live Activity token registry (issue 17): activity push tokens, push-to-start tokens per
/// attributes type, and the device's end of an activity. The SDK calls exactly these routes
/// (`SDK/Sources/BuzzKit/Activities/Activities.swift`); client keys may, for their own
/// installation's identities only. Registration is an idempotent upsert; an activity that ended
/// stays ended (nothing pushes to it again), and a token APNs refused is used again only once it
/// is registered again. None of them answers 404 for an unknown activity: the SDK reads a 404
/// `not_found` from these routes as "this server has no Live Activities". The registry's
/// statements are the ledger's (`LiveActivityRegistry`).
enum LiveActivityRoutes {
    static let environments = ["sandbox", "production"]
    /// `live_activities.state` (the migration's CHECK list): an ended activity is never pushed to again.
    static let states = LiveActivityVocabulary.State.allCases.map(\.rawValue)
    /// `live_activities.ended_by`: ended on the device (`DELETE`) or by an `end` send.
    static let endedBy = LiveActivityVocabulary.EndedBy.allCases.map(\.rawValue)
    /// `token_status` of activities and push-to-start tokens: a token APNs refused is `invalid`.
    static let tokenStatuses = LiveActivityVocabulary.TokenStatus.allCases.map(\.rawValue)

    static let activity = Schema.object([
        "activityId": Schema.string(FieldRules.activityIDRule),
        "subscriberId": Schema.string(FieldRules.identifierRule),
        "attributesType": Schema.string(FieldRules.attributesTypeRule),
        "token": Schema.string(FieldRules.liveActivityTokenRule, "the activity's current push token, lowercase hex"),
        "environment": Schema.string(enumeration: environments),
        "bundleId": Schema.nullable(Schema.string(FieldRules.bundleIDRule)),
        "state": Schema.string(enumeration: states),
        "endedBy": Schema.nullable(Schema.string(enumeration: endedBy)),
        "endedAt": Schema.nullable(Schema.timestamp),
        "tokenStatus": Schema.string(enumeration: tokenStatuses),
        "tokenInvalidReason": Schema.nullable(Schema.string("APNs reason, e.g. Unregistered or BadDeviceToken")),
        "tokenInvalidatedAt": Schema.nullable(Schema.timestamp),
        "lastEvent": Schema.nullable(
            Schema.string(enumeration: LiveActivitySendRequest.Event.allCases.map(\.rawValue))),
        "lastTimestamp": Schema.nullable(Schema.integer),
        "lastUpdateAt": Schema.nullable(Schema.timestamp),
        "registeredAt": Schema.timestamp, "updatedAt": Schema.timestamp
    ])

    static let startToken = Schema.object([
        "attributesType": Schema.string(FieldRules.attributesTypeRule),
        "subscriberId": Schema.string(FieldRules.identifierRule),
        "token": Schema.string(FieldRules.liveActivityTokenRule, "the push-to-start token, lowercase hex"),
        "environment": Schema.string(enumeration: environments),
        "bundleId": Schema.nullable(Schema.string(FieldRules.bundleIDRule)),
        "tokenStatus": Schema.string(enumeration: tokenStatuses),
        "tokenInvalidReason": Schema.nullable(Schema.string("APNs reason, e.g. Unregistered or BadDeviceToken")),
        "tokenInvalidatedAt": Schema.nullable(Schema.timestamp),
        "lastSentAt": Schema.nullable(Schema.timestamp),
        "registeredAt": Schema.timestamp, "updatedAt": Schema.timestamp
    ])

    static let activityPath: [String: TextRule] = [
        "id": FieldRules.identifierRule, "activityId": FieldRules.activityIDRule
    ]
    static let typePath: [String: TextRule] = [
        "id": FieldRules.identifierRule, "attributesType": FieldRules.attributesTypeRule
    ]

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/v1/subscribers/{id}/live-activities", id: "listLiveActivities",
                "A subscriber's Live Activities: state (active, ended), last update and token status, in activity id order",
                access: .tenant(.subscribersRead, clientKeys: false), path: SubscriberRoutes.idPath,
                response: activity, paginated: true, errors: [.notFound],
                handler: { g, c in try await g.listLiveActivities(c) }),
            GatewayRoute(
                "PUT", "/v1/subscribers/{id}/live-activities/{activityId}", id: "registerLiveActivity",
                "Register an activity's push token, or its rotation (201 when new); the old token is never pushed again",
                access: .tenant(.subscribersWrite, clientKeys: true), path: activityPath,
                body: Schema.object(
                    [
                        "attributesType": Schema.string(
                            FieldRules.attributesTypeRule,
                            "the attributes type's Swift name, String(describing:)"),
                        "token": Schema.string(FieldRules.liveActivityTokenRule, "the activity's push token, hex"),
                        "environment": Schema.string(enumeration: environments),
                        "bundleId": Schema.nullable(Schema.string(FieldRules.bundleIDRule))
                    ], required: ["attributesType", "token", "environment"]),
                response: activity, handler: { g, c in try await g.registerLiveActivity(c) }),
            GatewayRoute(
                "DELETE", "/v1/subscribers/{id}/live-activities/{activityId}", id: "endLiveActivity",
                "The activity ended or was dismissed on the device: marked ended, nothing pushes to it again (idempotent)",
                access: .tenant(.subscribersWrite, clientKeys: true), path: activityPath,
                response: Schema.object(
                    ["activityId": Schema.string(FieldRules.activityIDRule), "ended": Schema.boolean],
                    description: "ended: whether this call ended it (false: unknown or already ended)"),
                handler: { g, c in try await g.endLiveActivity(c) }),
            GatewayRoute(
                "GET", "/v1/subscribers/{id}/live-activity-start-tokens", id: "listLiveActivityStartTokens",
                "A subscriber's push-to-start tokens (one per attributes type per device), in attributes type order",
                access: .tenant(.subscribersRead, clientKeys: false), path: SubscriberRoutes.idPath,
                response: startToken, paginated: true, errors: [.notFound],
                handler: { g, c in try await g.listLiveActivityStartTokens(c) }),
            GatewayRoute(
                "PUT", "/v1/subscribers/{id}/live-activity-start-tokens/{attributesType}",
                id: "registerLiveActivityStartToken",
                "Register this device's push-to-start token of an attributes type, or its rotation (201 when new)",
                access: .tenant(.subscribersWrite, clientKeys: true), path: typePath,
                body: Schema.object(
                    [
                        "token": Schema.string(FieldRules.liveActivityTokenRule, "the push-to-start token, hex"),
                        "environment": Schema.string(enumeration: environments),
                        "bundleId": Schema.nullable(Schema.string(FieldRules.bundleIDRule))
                    ], required: ["token", "environment"]),
                response: startToken, handler: { g, c in try await g.registerLiveActivityStartToken(c) })
        ]
    }
}

extension FieldRules {
    /// An activity's id as the SDK registered it (ActivityKit's `Activity.id`, a UUID string on
    /// iOS): 1-256 characters, no control characters.
    static let activityIDRule = TextRule.noControlCharacters(1, 256)
    /// An attributes type's name as `String(describing:)` gives it (`MatchAttributes`): 1-256
    /// characters, no control characters.
    static let attributesTypeRule = TextRule.noControlCharacters(1, 256)
    /// A Live Activity push token (activity or push-to-start): hex, an even 64 to 512 characters.
    static let liveActivityTokenRule = TextRule(
        minLength: 64, maxLength: 512, pattern: "^(?:[0-9A-Fa-f]{2})*$",
        problem: "must be 64 to 512 hexadecimal characters (an ActivityKit push token)"
    ) {
        $0.utf8.count % 2 == 0 && $0.utf8.allSatisfy(isHex)
    }
}

extension Gateway {
    /// The subscriber and the other path parameter, every problem at once.
    private func liveActivityPath(_ context: RequestContext, _ name: String, _ rule: TextRule) throws(APIError) -> (
        String, String
    ) {
        var issues: [ValidationIssue] = []
        var subscriber = ""
        var value = ""
        do { subscriber = try SubscriberRoutes.subscriberID(context) } catch { issues += Self.issues(of: error) }
        do { value = try Gateway.pathParameter(context, name, rule: rule) } catch { issues += Self.issues(of: error) }
        try Validator.throwIfAny(issues)
        return (subscriber, value)
    }

    func registerLiveActivity(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        var issues: [ValidationIssue] = []
        var path = ("", "")
        do { path = try liveActivityPath(context, "activityId", FieldRules.activityIDRule) } catch {
            issues += Self.issues(of: error)
        }
        let body = try context.request.jsonBody()
        var v = Validator(body, allowed: ["attributesType", "token", "environment", "bundleId"])
        let type = v.string("attributesType", required: true, rule: FieldRules.attributesTypeRule)
        let token = v.string("token", required: true, rule: FieldRules.liveActivityTokenRule)?.lowercased()
        let environment = v.oneOf("environment", LiveActivityRoutes.environments, required: true)
        let bundle = v.string("bundleId", rule: FieldRules.bundleIDRule)
        try Validator.throwIfAny(issues + v.issues)
        let (subscriber, activity) = path
        try await authorizeInstallation(context, subscriber: subscriber)
        let (record, inserted) = try await postgres.withTransaction { tx in
            try await tx.execute(
                "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, $2) ON CONFLICT DO NOTHING",
                [tenant, subscriber])
            guard
                let registered = try await LiveActivityRegistry.registerActivity(
                    on: tx, tenant: tenant, activity: activity, subscriber: subscriber, attributesType: type ?? "",
                    token: token ?? "", environment: environment ?? "", bundleId: bundle)
            else { throw APIError.internalError }
            return registered
        }
        return .json(.object(record.json), status: inserted ? 201 : 200)
    }

    func endLiveActivity(_ context: RequestContext) async throws -> Response {
        let (subscriber, activity) = try liveActivityPath(context, "activityId", FieldRules.activityIDRule)
        try await authorizeInstallation(context, subscriber: subscriber)
        let ended = try await LiveActivityRegistry.endActivity(
            postgres, tenant: try context.tenant, activity: activity, subscriber: subscriber)
        return .json(["activityId": .string(activity), "ended": .bool(ended)])
    }

    func registerLiveActivityStartToken(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        var issues: [ValidationIssue] = []
        var path = ("", "")
        do { path = try liveActivityPath(context, "attributesType", FieldRules.attributesTypeRule) } catch {
            issues += Self.issues(of: error)
        }
        let body = try context.request.jsonBody()
        var v = Validator(body, allowed: ["token", "environment", "bundleId"])
        let token = v.string("token", required: true, rule: FieldRules.liveActivityTokenRule)?.lowercased()
        let environment = v.oneOf("environment", LiveActivityRoutes.environments, required: true)
        let bundle = v.string("bundleId", rule: FieldRules.bundleIDRule)
        try Validator.throwIfAny(issues + v.issues)
        let (subscriber, type) = path
        try await authorizeInstallation(context, subscriber: subscriber)
        // The device: the installation a client key names; a server key names none, so there the
        // token itself stands for the device.
        let deviceKey = context.installation.map { "inst:" + $0.id.uuidString.lowercased() } ?? "token:" + (token ?? "")
        let (record, inserted) = try await postgres.withTransaction { tx in
            try await tx.execute(
                "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, $2) ON CONFLICT DO NOTHING",
                [tenant, subscriber])
            guard
                let registered = try await LiveActivityRegistry.registerStartToken(
                    on: tx, tenant: tenant, subscriber: subscriber, attributesType: type, deviceKey: deviceKey,
                    token: token ?? "", environment: environment ?? "", bundleId: bundle)
            else { throw APIError.internalError }
            return registered
        }
        return .json(.object(record.json), status: inserted ? 201 : 200)
    }

    func listLiveActivities(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let subscriber = try SubscriberRoutes.subscriberID(context)
        let page = try Page(context.request)
        try await requireSubscriber(tenant, subscriber)
        let records = try await LiveActivityRegistry.activities(
            postgres, tenant: tenant, subscriber: subscriber, after: page.after, limit: page.limit + 1)
        return page.response(records.map(\.json)) { $0["activityId"]?.stringValue ?? "" }
    }

    func listLiveActivityStartTokens(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let subscriber = try SubscriberRoutes.subscriberID(context)
        let page = try Page(context.request)
        try await requireSubscriber(tenant, subscriber)
        // Keyset on (attributes type, token): the cursor is both, joined by U+0000 (in neither).
        var afterType: String?
        var afterToken: String?
        if let after = page.after {
            let parts = after.split(separator: "\u{0}", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            afterType = parts.first
            afterToken = parts.count > 1 ? parts[1] : ""
        }
        let records = try await LiveActivityRegistry.startTokens(
            postgres, tenant: tenant, subscriber: subscriber, after: afterType.map { ($0, afterToken ?? "") },
            limit: page.limit + 1)
        return page.response(records.map(\.json)) {
            ($0["attributesType"]?.stringValue ?? "") + "\u{0}" + ($0["token"]?.stringValue ?? "")
        }
    }

    private func requireSubscriber(_ tenant: UUID, _ subscriber: String) async throws {
        let exists = try await postgres.query(
            "SELECT 1 FROM subscribers WHERE tenant_id = $1::uuid AND id = $2", [tenant, subscriber])
        guard !exists.isEmpty else { throw APIError.notFound("subscriber") }
    }
}
