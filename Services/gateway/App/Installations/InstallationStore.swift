import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The `installations` table: register (returning the token once), look up by token hash, record
/// the subscriber id of identify, and revoke the installations of a revoked key.
struct InstallationStore: Sendable {
    let postgres: PostgresClient

    static let columns = """
        id, tenant_id, api_key_id, anonymous_id, subscriber_id, to_json(created_at)#>>'{}' AS created_at
        """

    /// A registered installation: its JSON representation (with `token`, shown this once).
    struct Created: Sendable {
        var record: InstallationRecord
        var json: JSONValue
    }

    /// Registers an installation for `anonymousID`; nil when the tenant already has a live one for it.
    func create(tenantID: UUID, apiKeyID: UUID, anonymousID: String) async throws -> Created? {
        let token = InstallationToken.generate()
        let hash = InstallationToken.hash(token)
        let rows = try await postgres.query(
            """
            INSERT INTO installations (tenant_id, api_key_id, anonymous_id, token_hash) VALUES ($1::uuid, $2::uuid, $3, $4)
            ON CONFLICT (tenant_id, anonymous_id) WHERE revoked_at IS NULL DO NOTHING
            RETURNING \(Self.columns)
            """, [tenantID, apiKeyID, anonymousID, Data(hash)])
        guard let row = rows.first else { return nil }
        var record = try Self.record(row)
        record.tokenHash = hash
        let json: JSONValue = [
            "id": .string(record.id.lowercasedText), "anonymousId": .string(record.anonymousID),
            "subscriberId": .null, "token": .string(token), "createdAt": try row.text("created_at")
        ]
        return Created(record: record, json: json)
    }

    /// The live installation with this token hash whose registering key is not revoked.
    func lookup(hash: [UInt8]) async throws -> InstallationRecord? {
        let rows = try await postgres.query(
            """
            SELECT i.id, i.tenant_id, i.api_key_id, i.anonymous_id, i.subscriber_id FROM installations i
            JOIN api_keys k ON k.id = i.api_key_id
            WHERE i.token_hash = $1 AND i.revoked_at IS NULL AND k.revoked_at IS NULL
            """, [Data(hash)])
        guard let row = rows.first else { return nil }
        var record = try Self.record(row)
        record.tokenHash = hash
        return record
    }

    /// Records the subscriber id identify linked the installation's anonymous id to. Runs inside
    /// identify's transaction.
    static func setSubscriber(
        _ subscriberID: String, tenantID: UUID, anonymousID: String,
        on tx: PostgresConnection
    ) async throws {
        try await tx.execute(
            """
            UPDATE installations SET subscriber_id = $3, updated_at = now()
            WHERE tenant_id = $1::uuid AND anonymous_id = $2 AND revoked_at IS NULL
            """, [tenantID, anonymousID, subscriberID])
    }

    static func record(_ row: PostgresRow) throws -> InstallationRecord {
        InstallationRecord(
            id: try row.decode(UUID.self, named: "id"), tenantID: try row.decode(UUID.self, named: "tenant_id"),
            apiKeyID: try row.decode(UUID.self, named: "api_key_id"),
            anonymousID: try row.decode(String.self, named: "anonymous_id"),
            subscriberID: try row.decode(String?.self, named: "subscriber_id"))
    }
}
