import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The `api_keys` table: create (returning the secret once), look up by hash, list, revoke, and
/// the batched `last_used_at` update.
public struct KeyStore: Sendable {
    let postgres: PostgresClient

    public init(postgres: PostgresClient) { self.postgres = postgres }

    static let columns = """
        id, workspace_id, tenant_id, kind, name, prefix, scopes, \
        to_json(created_at)#>>'{}' AS created_at, to_json(last_used_at)#>>'{}' AS last_used_at, \
        to_json(revoked_at)#>>'{}' AS revoked_at
        """

    /// The active (not revoked) key with this hash.
    func lookup(hash: [UInt8]) async throws -> APIKeyRecord? {
        let rows = try await postgres.query(
            "SELECT id, workspace_id, tenant_id, kind, scopes FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL",
            [Data(hash)])
        guard let row = rows.first else { return nil }
        let (id, workspaceID, tenantID, kind, scopes) = try row.decode((UUID, UUID, UUID?, String, [String]).self)
        guard let kind = APIKeyKind(rawValue: kind) else { return nil }
        return APIKeyRecord(
            id: id, workspaceID: workspaceID, tenantID: tenantID, kind: kind,
            scopes: Set(scopes.compactMap(Scope.init(rawValue:))))
    }

    /// A created key: its JSON representation (with `secret`, shown this once) and the secret.
    public struct Created: Sendable {
        public var id: UUID
        public var secret: String
        public var json: JSONValue
    }

    /// Inserts a key. Scopes are trusted here; the API route validates them.
    public func create(
        workspaceID: UUID, tenantID: UUID?, kind: APIKeyKind, name: String, scopes: [Scope],
        on connection: PostgresConnection? = nil
    ) async throws -> Created {
        let secret = APIKeyFormat.generate(kind: kind)
        let sql = """
            INSERT INTO api_keys (workspace_id, tenant_id, kind, name, prefix, secret_hash, scopes)
            VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6, $7::text[]) RETURNING \(Self.columns)
            """
        let parameters: [any PostgresEncodable] = [
            workspaceID, tenantID, kind.rawValue, name, APIKeyFormat.visiblePrefix(of: secret),
            Data(APIKeyFormat.hash(secret)), scopes.sorted().map(\.rawValue)
        ]
        let rows =
            if let connection {
                try await connection.query(sql, parameters)
            } else {
                try await postgres.query(sql, parameters)
            }
        guard let row = rows.first else { throw APIError.internalError }
        var json = try Self.representation(row)
        json["secret"] = .string(secret)
        return Created(id: try row.decode(UUID.self, named: "id"), secret: secret, json: .object(json))
    }

    func list(workspaceID: UUID, after cursor: String?, limit: Int) async throws -> [[String: JSONValue]] {
        let rows = try await postgres.query(
            """
            SELECT \(Self.columns) FROM api_keys
            WHERE workspace_id = $1::uuid AND ($2::uuid IS NULL OR id > $2::uuid)
            ORDER BY id LIMIT $3
            """, [workspaceID, cursor, limit])
        return try rows.map(Self.representation)
    }

    /// One key of the workspace by id (revoked or not); nil when there is none.
    func get(workspaceID: UUID, id: UUID) async throws -> [String: JSONValue]? {
        let rows = try await postgres.query(
            "SELECT \(Self.columns) FROM api_keys WHERE workspace_id = $1::uuid AND id = $2::uuid",
            [workspaceID, id])
        return try rows.first.map(Self.representation)
    }

    /// Marks the key revoked (idempotent), with the installations it registered (which frees their
    /// anonymous ids for a new registration); nil when the workspace has no key with this id.
    func revoke(workspaceID: UUID, id: UUID) async throws -> [String: JSONValue]? {
        try await postgres.withTransaction { tx in
            let rows = try await tx.query(
                """
                UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
                WHERE workspace_id = $1::uuid AND id = $2::uuid RETURNING \(Self.columns)
                """, [workspaceID, id])
            guard let row = rows.first else { return nil }
            try await tx.execute(
                "UPDATE installations SET revoked_at = now() WHERE api_key_id = $1::uuid AND revoked_at IS NULL", [id])
            return try Self.representation(row)
        }
    }

    /// One statement for every key used since the last flush.
    func touch(_ ids: [UUID]) async throws {
        guard !ids.isEmpty else { return }
        try await postgres.execute(
            "UPDATE api_keys SET last_used_at = now() WHERE id = ANY($1::uuid[])", [ids.map(\.uuidString)])
    }

    static func representation(_ row: PostgresRow) throws -> [String: JSONValue] {
        [
            "id": .string(try row.decode(UUID.self, named: "id").lowercasedText),
            "workspaceId": .string(try row.decode(UUID.self, named: "workspace_id").lowercasedText),
            "tenantId": (try row.decode(UUID?.self, named: "tenant_id")).map { .string($0.lowercasedText) } ?? .null,
            "kind": .string(try row.decode(String.self, named: "kind")),
            "name": .string(try row.decode(String.self, named: "name")),
            "prefix": .string(try row.decode(String.self, named: "prefix")),
            "scopes": .array(try row.decode([String].self, named: "scopes").map(JSONValue.string)),
            "createdAt": .string(try row.decode(String.self, named: "created_at")),
            "lastUsedAt": (try row.decode(String?.self, named: "last_used_at")).map(JSONValue.string) ?? .null,
            "revokedAt": (try row.decode(String?.self, named: "revoked_at")).map(JSONValue.string) ?? .null
        ]
    }
}
