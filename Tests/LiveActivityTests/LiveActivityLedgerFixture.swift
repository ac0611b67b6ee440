import BuzzKitContracts
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitTestSupport
import Foundation

@testable import LiveActivityApp

/// A schema of a test's own with every migration applied (`MigratedSchema`), one tenant, and
/// helpers to register activities and push-to-start tokens the way the gateway does.
final class LiveActivityLedgerFixture: Sendable {
    let schema: MigratedSchema
    let tenantId: UUID
    let ledger: Ledger
    var postgres: PostgresClient { schema.postgres }

    private init(schema: MigratedSchema, tenantId: UUID) {
        self.schema = schema
        self.tenantId = tenantId
        ledger = Ledger(postgres: schema.postgres, logger: .silent())
    }

    static func start() async throws -> LiveActivityLedgerFixture {
        let schema = try await MigratedSchema.start("laledger")
        return LiveActivityLedgerFixture(schema: schema, tenantId: try await schema.makeTenant())
    }

    func stop() async { await schema.stop() }

    func subscriber(_ id: String) async throws {
        try await postgres.execute(
            "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, $2) ON CONFLICT DO NOTHING", [tenantId, id])
    }

    /// An activity of `subscriber` with `token`, then `state` / `tokenStatus` / `lastTimestamp` as given.
    func activity(
        _ subscriber: String, _ activity: String, token: String, ended: Bool = false, invalid: Bool = false,
        lastTimestamp: Int? = nil
    ) async throws {
        try await self.subscriber(subscriber)
        try await postgres.execute(
            """
            INSERT INTO live_activities (tenant_id, activity_id, subscriber_id, attributes_type, token, environment,
                                         state, ended_by, token_status, last_timestamp)
            VALUES ($1::uuid, $2, $3, 'MatchAttributes', $4, 'sandbox', $5, $6, $7, $8)
            """,
            [
                tenantId, activity, subscriber, token, ended ? "ended" : "active", ended ? "device" : nil,
                invalid ? "invalid" : "active", lastTimestamp
            ])
    }

    func startToken(_ subscriber: String, token: String, invalid: Bool = false) async throws {
        try await self.subscriber(subscriber)
        try await postgres.execute(
            """
            INSERT INTO live_activity_start_tokens (tenant_id, subscriber_id, attributes_type, device_key, token,
                                                    environment, token_status)
            VALUES ($1::uuid, $2, 'MatchAttributes', $3, $3, 'sandbox', $4)
            """, [tenantId, subscriber, token, invalid ? "invalid" : "active"])
    }

    func entry(
        _ event: LiveActivitySendRequest.Event, to subscriber: String, activity: String? = nil, timestamp: Int64 = 100,
        message: UUID = UUID()
    ) -> LiveActivityEntry {
        LiveActivityEntry(
            tenantId: tenantId, messageId: message, replyKey: "k",
            request: LiveActivitySendRequest(
                to: subscriber, event: event, activityId: event == .start ? nil : activity,
                attributesType: event == .start ? "MatchAttributes" : nil, contentState: ["n": 1],
                alert: event == .start ? ["title": "go"] : nil, timestamp: timestamp))
    }

    /// Decides `entries` the way a lane does: round by round.
    func decide(_ entries: [LiveActivityEntry]) async throws -> [LiveActivityPlan] {
        var plans: [LiveActivityPlan?] = Array(repeating: nil, count: entries.count)
        for round in LiveActivityRounds.split(entries) {
            for (index, plan) in zip(
                round, try await ledger.decideLiveActivities(round.map { entries[$0] }, instance: "test"))
            {
                plans[index] = plan
            }
        }
        return plans.compactMap { $0 }
    }

    func count(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> Int {
        try await postgres.query(sql, parameters)[0].decode(Int.self, at: 0)
    }
}

extension LiveActivityPlan {
    /// `send` tokens, `skip:<status>` per skipped token, `replay`, or the error's code.
    var summary: [String] {
        switch self {
        case .replay: ["replay"]
        case .error(let code, _): [code.rawValue]
        case .send(_, let targets, let skipped):
            targets.map { "send:" + $0.token } + skipped.map { $0.status.rawValue + ":" + $0.token }
        case .skipped(let skipped): skipped.map { $0.status.rawValue + ":" + $0.token }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
