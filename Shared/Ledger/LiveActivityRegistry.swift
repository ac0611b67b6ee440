import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The Live Activity token registry's vocabularies, as `live_activities` and
/// `live_activity_start_tokens` store them (migration 0012; `StatusCheckTests` holds each equal
/// to its column's `CHECK` list).
public enum LiveActivityVocabulary {
    /// `live_activities.state`: `active` until the device reports the activity ended or dismissed,
    /// or an `end` was sent; `ended` is final.
    public enum State: String, Sendable, Hashable, CaseIterable {
        case active
        case ended
    }

    /// `live_activities.ended_by`: the device (DELETE from the SDK) or a sent `end`.
    public enum EndedBy: String, Sendable, Hashable, CaseIterable {
        case device
        case send
    }

    /// `token_status` of both tables: `invalid` once APNs refused the token, until it is
    /// registered again.
    public enum TokenStatus: String, Sendable, Hashable, CaseIterable {
        case active
        case invalid
    }
}

/// One activity as the registry holds it and the API shows it (timestamps as Postgres writes
/// them in JSON).
public struct LiveActivityRecord: Sendable, Hashable {
    public var json: [String: JSONValue]

    /// The columns `init(row:)` reads.
    static let columns = """
        activity_id, subscriber_id, attributes_type, token, environment, bundle_id, state, ended_by,
        to_json(ended_at)#>>'{}' AS ended_at, token_status, token_invalid_reason,
        to_json(token_invalidated_at)#>>'{}' AS token_invalidated_at, last_event, last_timestamp,
        to_json(last_sent_at)#>>'{}' AS last_sent_at, to_json(registered_at)#>>'{}' AS registered_at,
        to_json(updated_at)#>>'{}' AS updated_at
        """

    init(row: PostgresRow) throws {
        func text(_ name: String) throws -> JSONValue {
            (try row.decode(String?.self, named: name)).map(JSONValue.string) ?? .null
        }
        json = [
            "activityId": try text("activity_id"), "subscriberId": try text("subscriber_id"),
            "attributesType": try text("attributes_type"), "token": try text("token"),
            "environment": try text("environment"), "bundleId": try text("bundle_id"), "state": try text("state"),
            "endedBy": try text("ended_by"), "endedAt": try text("ended_at"), "tokenStatus": try text("token_status"),
            "tokenInvalidReason": try text("token_invalid_reason"),
            "tokenInvalidatedAt": try text("token_invalidated_at"), "lastEvent": try text("last_event"),
            "lastTimestamp": try row.decode(Int64?.self, named: "last_timestamp").map { .int($0) } ?? .null,
            "lastUpdateAt": try text("last_sent_at"), "registeredAt": try text("registered_at"),
            "updatedAt": try text("updated_at")
        ]
    }
}

/// One push-to-start token as the registry holds it and the API shows it.
public struct LiveActivityStartTokenRecord: Sendable, Hashable {
    public var json: [String: JSONValue]

    static let columns = """
        attributes_type, subscriber_id, token, environment, bundle_id, token_status, token_invalid_reason,
        to_json(token_invalidated_at)#>>'{}' AS token_invalidated_at, to_json(last_sent_at)#>>'{}' AS last_sent_at,
        to_json(registered_at)#>>'{}' AS registered_at, to_json(updated_at)#>>'{}' AS updated_at
        """

    init(row: PostgresRow) throws {
        func text(_ name: String) throws -> JSONValue {
            (try row.decode(String?.self, named: name)).map(JSONValue.string) ?? .null
        }
        json = [
            "attributesType": try text("attributes_type"), "subscriberId": try text("subscriber_id"),
            "token": try text("token"), "environment": try text("environment"), "bundleId": try text("bundle_id"),
            "tokenStatus": try text("token_status"), "tokenInvalidReason": try text("token_invalid_reason"),
            "tokenInvalidatedAt": try text("token_invalidated_at"), "lastSentAt": try text("last_sent_at"),
            "registeredAt": try text("registered_at"), "updatedAt": try text("updated_at")
        ]
    }
}

/// What the SDK's registrations write into the Live Activity registry (the gateway's routes): an
/// idempotent upsert per activity token and per push-to-start token, and the device's end of an
/// activity; and the registry's reads. The liveactivity service's side (decisions, sends,
/// refused tokens) is `Ledger.decideLiveActivities` and `Ledger.record`.
///
/// Each write that joins the caller's transaction (the subscriber's row is created in the same
/// one) takes its connection.
public enum LiveActivityRegistry {
    /// Registers an activity's push token, or its rotation: a rotation replaces the token (the
    /// old one is never pushed again); registering a token again makes it usable again (APNs's
    /// refusal forgotten). An ended activity stays ended. Answers the row and whether it is new.
    public static func registerActivity(
        on tx: PostgresConnection, tenant: UUID, activity: String, subscriber: String, attributesType: String,
        token: String, environment: String, bundleId: String?
    ) async throws -> (record: LiveActivityRecord, inserted: Bool)? {
        let rows = try await tx.query(
            """
            INSERT INTO live_activities AS a (tenant_id, activity_id, subscriber_id, attributes_type, token, environment, bundle_id)
            VALUES ($1::uuid, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (tenant_id, activity_id) DO UPDATE SET
                subscriber_id = EXCLUDED.subscriber_id, attributes_type = EXCLUDED.attributes_type,
                token = EXCLUDED.token, environment = EXCLUDED.environment, bundle_id = EXCLUDED.bundle_id,
                token_status = '\(LiveActivityVocabulary.TokenStatus.active.rawValue)', token_invalid_reason = NULL,
                token_invalidated_at = NULL, updated_at = now()
            RETURNING \(LiveActivityRecord.columns), (xmax = 0) AS inserted
            """, [tenant, activity, subscriber, attributesType, token, environment, bundleId])
        guard let row = rows.first else { return nil }
        return (try LiveActivityRecord(row: row), try row.decode(Bool.self, named: "inserted"))
    }

    /// The device says the activity ended or was dismissed: marked ended by the device, nothing
    /// pushes to it again, and its `live_activity.ended` webhook event (`endedBy: device`)
    /// enqueued in the same statement. Answers whether this call ended it (false: unknown or
    /// already ended; no event then).
    public static func endActivity(
        _ postgres: PostgresClient, tenant: UUID, activity: String, subscriber: String
    ) async throws -> Bool {
        let rows = try await postgres.query(endActivitySQL, [tenant, activity, subscriber])
        return try (rows.first?.decode(Int.self, at: 0) ?? 0) > 0
    }

    static let endActivitySQL = """
        WITH ended AS (
            UPDATE live_activities SET state = '\(LiveActivityVocabulary.State.ended.rawValue)',
                ended_by = '\(LiveActivityVocabulary.EndedBy.device.rawValue)', ended_at = now(), updated_at = now()
            WHERE tenant_id = $1::uuid AND activity_id = $2 AND subscriber_id = $3
              AND state = '\(LiveActivityVocabulary.State.active.rawValue)'
            RETURNING tenant_id, activity_id, subscriber_id, attributes_type, ended_at
        ), ended_events AS (
            \(Ledger.endedEvents(from: "ended e", endedBy: .device, filter: nil))
        )
        SELECT count(*)::int FROM ended
        """

    /// Registers a device's push-to-start token of an attributes type, or its rotation. The device
    /// is `deviceKey` (the installation a client key names, or the token itself for a server key);
    /// the same token under another subscriber or device key is this device, moved (identify), so
    /// that row goes. Answers the row and whether it is new.
    public static func registerStartToken(
        on tx: PostgresConnection, tenant: UUID, subscriber: String, attributesType: String, deviceKey: String,
        token: String, environment: String, bundleId: String?
    ) async throws -> (record: LiveActivityStartTokenRecord, inserted: Bool)? {
        try await tx.execute(
            """
            DELETE FROM live_activity_start_tokens
            WHERE tenant_id = $1::uuid AND attributes_type = $2 AND token = $3 AND (subscriber_id <> $4 OR device_key <> $5)
            """, [tenant, attributesType, token, subscriber, deviceKey])
        let rows = try await tx.query(
            """
            INSERT INTO live_activity_start_tokens AS t (tenant_id, subscriber_id, attributes_type, device_key, token,
                                                         environment, bundle_id)
            VALUES ($1::uuid, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (tenant_id, subscriber_id, attributes_type, device_key) DO UPDATE SET
                token = EXCLUDED.token, environment = EXCLUDED.environment, bundle_id = EXCLUDED.bundle_id,
                token_status = '\(LiveActivityVocabulary.TokenStatus.active.rawValue)', token_invalid_reason = NULL,
                token_invalidated_at = NULL, updated_at = now()
            RETURNING \(LiveActivityStartTokenRecord.columns), (xmax = 0) AS inserted
            """, [tenant, subscriber, attributesType, deviceKey, token, environment, bundleId])
        guard let row = rows.first else { return nil }
        return (try LiveActivityStartTokenRecord(row: row), try row.decode(Bool.self, named: "inserted"))
    }

    // MARK: - Reads

    /// A subscriber's activities in activity id order, after `after`, at most `limit`.
    public static func activities(
        _ postgres: PostgresClient, tenant: UUID, subscriber: String, after: String?, limit: Int
    ) async throws -> [LiveActivityRecord] {
        try await postgres.query(
            """
            SELECT \(LiveActivityRecord.columns) FROM live_activities
            WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND ($3::text IS NULL OR activity_id > $3)
            ORDER BY activity_id LIMIT $4
            """, [tenant, subscriber, after, limit]
        ).map(LiveActivityRecord.init(row:))
    }

    /// A subscriber's push-to-start tokens in (attributes type, token) order, after that key.
    public static func startTokens(
        _ postgres: PostgresClient, tenant: UUID, subscriber: String, after: (type: String, token: String)?,
        limit: Int
    ) async throws -> [LiveActivityStartTokenRecord] {
        try await postgres.query(
            """
            SELECT \(LiveActivityStartTokenRecord.columns) FROM live_activity_start_tokens
            WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND ($3::text IS NULL OR (attributes_type, token) > ($3, $4))
            ORDER BY attributes_type, token LIMIT $5
            """, [tenant, subscriber, after?.type, after?.token ?? "", limit]
        ).map(LiveActivityStartTokenRecord.init(row:))
    }
}
