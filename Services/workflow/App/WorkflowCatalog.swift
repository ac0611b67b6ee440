import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation
import Synchronization

/// What a run needs besides its state, read from the gateway's tables: definitions by version
/// (cached: versions are immutable), the workflows an event name starts (read fresh for every
/// batch: a workflow saved just before its first event starts a run), the tenant's quiet hours
/// and default zone, and subscribers.
final class WorkflowCatalog: Sendable {
    struct VersionKey: Hashable {
        var tenantId: UUID
        var key: String
        var version: Int
    }

    /// An enabled workflow an event starts, at its current version.
    struct Triggered: Sendable {
        var key: String
        var version: Int
        var definition: WorkflowDefinition
    }

    struct Settings: Sendable {
        var quietHours: QuietHours?
        var defaultTimeZone: String?
    }

    private let definitions = Mutex<[VersionKey: WorkflowDefinition]>([:])

    /// The definition of `key` at `version`; nil when the version is missing or no longer parses
    /// (the run then fails with `definition_missing`).
    func definition(on connection: PostgresConnection, tenantId: UUID, key: String, version: Int) async throws
        -> WorkflowDefinition?
    {
        let cacheKey = VersionKey(tenantId: tenantId, key: key, version: version)
        if let cached = definitions.withLock({ $0[cacheKey] }) { return cached }
        let rows = try await connection.query(
            """
            SELECT definition FROM workflow_versions WHERE tenant_id = $1::uuid AND workflow_key = $2 AND version = $3
            """, [tenantId, key, version])
        guard let text = try rows.first?.decode(String.self, at: 0), let json = try? JSONValue.parse(text),
            case .success(let definition) = WorkflowDefinition.parse(json)
        else { return nil }
        definitions.withLock { $0[cacheKey] = definition }
        return definition
    }

    /// The enabled, not deleted workflows of `tenantId` whose trigger is one of `names`.
    func triggered(on connection: PostgresConnection, tenantId: UUID, names: [String]) async throws -> [String:
        [Triggered]]
    {
        guard !names.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT key, current_version, trigger_event FROM workflows
            WHERE tenant_id = $1::uuid AND trigger_event = ANY ($2::text[]) AND enabled AND deleted_at IS NULL
            """, [tenantId, names])
        var result: [String: [Triggered]] = [:]
        for row in rows {
            let (key, version, name) = try row.decode((String, Int, String).self)
            guard let definition = try await definition(on: connection, tenantId: tenantId, key: key, version: version)
            else { continue }
            result[name, default: []].append(Triggered(key: key, version: version, definition: definition))
        }
        return result
    }

    func settings(on connection: PostgresConnection, tenantId: UUID) async throws -> Settings {
        let rows = try await connection.query(
            "SELECT quiet_hours_start, quiet_hours_end, default_timezone FROM tenants WHERE id = $1::uuid", [tenantId])
        guard let row = rows.first else { return Settings() }
        let start = try row.decode(String?.self, at: 0).flatMap(WallClockTime.init)
        let end = try row.decode(String?.self, at: 1).flatMap(WallClockTime.init)
        return Settings(
            quietHours: start.flatMap { s in end.map { QuietHours(start: s, end: $0) } },
            defaultTimeZone: try row.decode(String?.self, at: 2))
    }

    /// The subscribers of `ids` that exist, as runs snapshot them, in one statement.
    func subscribers(on connection: PostgresConnection, tenantId: UUID, ids: [String]) async throws -> [String:
        WorkflowSubscriber]
    {
        guard !ids.isEmpty else { return [:] }
        if ids.count == 1 {
            return try await subscriber(on: connection, tenantId: tenantId, id: ids[0]).map { [ids[0]: $0] } ?? [:]
        }
        let rows = try await connection.query(
            "SELECT id, attributes, timezone, locale FROM subscribers WHERE tenant_id = $1::uuid AND id = ANY ($2::text[])",
            [tenantId, ids])
        var found: [String: WorkflowSubscriber] = [:]
        for row in rows {
            let id = try row.decode(String.self, at: 0)
            found[id] = WorkflowSubscriber(
                id: id, attributes: try row.decode(JSONValue.self, at: 1),
                timezone: try row.decode(String?.self, at: 2), locale: try row.decode(String?.self, at: 3))
        }
        return found
    }

    /// The subscriber as a run snapshots it; nil when the tenant has no such subscriber.
    func subscriber(on connection: PostgresConnection, tenantId: UUID, id: String) async throws -> WorkflowSubscriber? {
        let rows = try await connection.query(
            "SELECT attributes, timezone, locale FROM subscribers WHERE tenant_id = $1::uuid AND id = $2",
            [tenantId, id])
        guard let row = rows.first else { return nil }
        return WorkflowSubscriber(
            id: id, attributes: try row.decode(JSONValue.self, at: 0),
            timezone: try row.decode(String?.self, at: 1), locale: try row.decode(String?.self, at: 2))
    }
}
