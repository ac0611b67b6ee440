import BuzzKitWire
import Foundation

/// The offline queue and the SDK's small persistent state, in one SQLite database (WAL).
///
/// Tables: `events` (the queue, in tracking order, with the identity each event was tracked
/// under and its failed attempts), `state` (key/value: anonymous id, subscriber id, stored app
/// version and build, session times, API settings for the extension), `cancel_on` (event name
/// to pending local notification id), `installations` (the per-installation token of each
/// anonymous id, and the subscriber it identified as), `activity_tokens` (Live Activity tokens
/// kept to register, or re-register, with the server) and `preference_changes` (the queue of
/// preference changes, `EventStore+Preferences.swift`). Every event is inserted before any network I/O, and rows
/// leave `events` only when the server acknowledged them, rejected them, or after too many failed
/// attempts, so a process killed mid-flush loses nothing.
final class EventStore: Sendable {
    static let fileName = "buzzkit.sqlite"

    let database: SQLiteDatabase

    /// Opens (creating when needed) `buzzkit.sqlite` in `directory`.
    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        database = try SQLiteDatabase(path: directory.appendingPathComponent(Self.fileName).path)
        try database.runSync { db in
            try db.execute(
                """
                CREATE TABLE IF NOT EXISTS events (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    identity_kind TEXT NOT NULL,
                    identity TEXT NOT NULL,
                    name TEXT NOT NULL,
                    data TEXT NOT NULL,
                    ts INTEGER NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS cancel_on (
                    event_name TEXT NOT NULL, local_id TEXT NOT NULL, PRIMARY KEY (event_name, local_id));
                CREATE TABLE IF NOT EXISTS installations (
                    anonymous_id TEXT PRIMARY KEY, token TEXT, subscriber_id TEXT,
                    seq INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE IF NOT EXISTS activity_tokens (
                    kind TEXT NOT NULL, key TEXT NOT NULL, attributes_type TEXT NOT NULL, token TEXT,
                    pending INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (kind, key));
                CREATE TABLE IF NOT EXISTS preference_changes (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    subscriber_id TEXT NOT NULL,
                    signature TEXT NOT NULL,
                    change TEXT NOT NULL,
                    revision INTEGER NOT NULL DEFAULT 0,
                    attempts INTEGER NOT NULL DEFAULT 0);
                """)
        }
    }

    // MARK: - The queue

    func insert(_ event: TrackedEvent, identity: EventIdentity) async throws {
        try await database.run { db in try Self.insert(db, event, identity: identity) }
    }

    /// Synchronous insert (the notification service extension, which must persist before it
    /// spends its short runtime on the network).
    func insertNow(_ event: TrackedEvent, identity: EventIdentity) throws {
        try database.runSync { db in try Self.insert(db, event, identity: identity) }
    }

    private static func insert(_ db: SQLiteDatabase.Connection, _ event: TrackedEvent, identity: EventIdentity) throws {
        try db.query(
            """
            INSERT OR IGNORE INTO events (id, identity_kind, identity, name, data, ts) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            """,
            [
                .text(event.id), .text(identity.isAnonymous ? "a" : "s"), .text(identity.value), .text(event.name),
                .text(JSONValue.object(event.data).jsonString), .int(event.timestampMicroseconds)
            ])
    }

    func count() async throws -> Int {
        try await database.run { db in Int(try db.query("SELECT count(*) FROM events").first?.first?.int ?? 0) }
    }

    /// The oldest queued event's identity with up to `limit` of its events, oldest first; nil
    /// when the queue is empty. `only` restricts the batch to those event ids.
    func nextBatch(limit: Int, only: Set<String>? = nil) async throws -> EventBatch? {
        try await database.run { db in
            var sql = "SELECT identity_kind, identity FROM events"
            var parameters: [SQLiteValue] = []
            if let only {
                sql += " WHERE id IN (" + only.indices.map { _ in "?" }.joined(separator: ",") + ")"
                parameters = only.sorted().map { .text($0) }
            }
            guard let first = try db.query(sql + " ORDER BY seq LIMIT 1", parameters).first,
                let kind = first[0].text, let who = first[1].text
            else { return nil }
            let identity: EventIdentity = kind == "a" ? .anonymous(who) : .subscriber(who)
            let rows = try db.query(
                """
                SELECT id, name, data, ts FROM events WHERE identity_kind = ?1 AND identity = ?2 ORDER BY seq
                """ + (only == nil ? " LIMIT \(limit)" : ""), [.text(kind), .text(who)])
            var events: [TrackedEvent] = []
            for row in rows {
                guard let id = row[0].text, let name = row[1].text, let text = row[2].text, let ts = row[3].int else {
                    continue
                }
                if let only, !only.contains(id) { continue }
                let data = (try? JSONValue.parse(text))?.objectValue ?? [:]
                events.append(TrackedEvent(id: id, name: name, data: data, timestampMicroseconds: ts))
                if events.count == limit { break }
            }
            return EventBatch(identity: identity, events: events)
        }
    }

    func delete(ids: [String]) async throws {
        try await database.run { db in
            try db.transaction {
                for id in ids { try db.query("DELETE FROM events WHERE id = ?1", [.text(id)]) }
            }
        }
    }

    /// Counts a failed attempt for `ids` and removes those that reached `maxAttempts`.
    /// Returns how many were given up.
    func recordFailedAttempt(ids: [String], maxAttempts: Int) async throws -> Int {
        try await database.run { db in
            try db.transaction {
                var given = 0
                for id in ids {
                    try db.query("UPDATE events SET attempts = attempts + 1 WHERE id = ?1", [.text(id)])
                    let rows = try db.query("SELECT attempts FROM events WHERE id = ?1", [.text(id)])
                    if let attempts = rows.first?.first?.int, attempts >= Int64(maxAttempts) {
                        try db.query("DELETE FROM events WHERE id = ?1", [.text(id)])
                        given += 1
                    }
                }
                return given
            }
        }
    }

    /// Failed attempts of one queued event (nil when it is not queued). For tests and diagnostics.
    func attempts(id: String) async throws -> Int? {
        try await database.run { db in
            try db.query("SELECT attempts FROM events WHERE id = ?1", [.text(id)]).first?.first?.int.map(Int.init)
        }
    }

    // MARK: - State

    func value(_ key: String) async throws -> String? {
        try await database.run { db in
            try db.query("SELECT value FROM state WHERE key = ?1", [.text(key)]).first?.first?.text
        }
    }

    func valueNow(_ key: String) throws -> String? {
        try database.runSync { db in
            try db.query("SELECT value FROM state WHERE key = ?1", [.text(key)]).first?.first?.text
        }
    }

    func setValue(_ value: String?, for key: String) async throws {
        try await database.run { db in try Self.set(db, value, key) }
    }

    func setValueNow(_ value: String?, for key: String) throws {
        try database.runSync { db in try Self.set(db, value, key) }
    }

    /// Sets several keys in one transaction (nil removes a key).
    func setValues(_ values: [String: String?]) async throws {
        try await database.run { db in
            try db.transaction { for (key, value) in values { try Self.set(db, value, key) } }
        }
    }

    private static func set(_ db: SQLiteDatabase.Connection, _ value: String?, _ key: String) throws {
        if let value {
            try db.query(
                "INSERT INTO state (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [.text(key), .text(value)])
        } else {
            try db.query("DELETE FROM state WHERE key = ?1", [.text(key)])
        }
    }

    // MARK: - cancelOn

    func addCancelOn(_ names: [String], localId: String) async throws {
        try await database.run { db in
            try db.transaction {
                for name in names {
                    try db.query(
                        "INSERT OR IGNORE INTO cancel_on (event_name, local_id) VALUES (?1, ?2)",
                        [.text(name), .text(localId)])
                }
            }
        }
    }

    /// The local notification ids `name` cancels, forgotten (under every name) as they are returned.
    func takeCancelled(by name: String) async throws -> [String] {
        try await database.run { db in
            try db.transaction {
                let ids = try db.query(
                    "SELECT local_id FROM cancel_on WHERE event_name = ?1 ORDER BY local_id", [.text(name)]
                )
                .compactMap { $0.first?.text }
                for id in ids { try db.query("DELETE FROM cancel_on WHERE local_id = ?1", [.text(id)]) }
                return ids
            }
        }
    }

    /// Forgets the cancelOn names of local notifications whose id equals or starts with `prefix`.
    func forgetCancelOn(matching prefix: String) async throws {
        try await database.run { db in
            try db.query(
                "DELETE FROM cancel_on WHERE local_id = ?1 OR substr(local_id, 1, length(?1)) = ?1", [.text(prefix)])
        }
    }

    func cancelOnNames() async throws -> [String: [String]] {
        try await database.run { db in
            var map: [String: [String]] = [:]
            for row in try db.query("SELECT event_name, local_id FROM cancel_on ORDER BY event_name, local_id") {
                if let name = row[0].text, let id = row[1].text { map[name, default: []].append(id) }
            }
            return map
        }
    }
}

/// Keys of the `state` table.
enum StateKey {
    static let anonymousId = "anonymousId"
    static let subscriberId = "subscriberId"
    /// The signature `identify(_:signature:)` was given for `subscriberId`.
    static let subscriberSignature = "subscriberSignature"
    static let pendingIdentify = "pendingIdentify"
    static let appVersion = "appVersion"
    static let appBuild = "appBuild"
    static let sessionStart = "sessionStart"
    static let backgroundAt = "backgroundAt"
    static let apiKey = "apiKey"
    static let baseURL = "baseURL"
    static let pushEnvironment = "pushEnvironment"
    static let deviceToken = "deviceToken"
    static let devicePermission = "devicePermission"
    static let deviceRegistrationPending = "deviceRegistrationPending"
    /// The last moment the SDK knew the app was in the foreground (a heartbeat), so a session
    /// whose process died in the foreground is closed at that moment on the next launch.
    static let lastActiveAt = "lastActiveAt"
    /// The notification permission last read from the platform.
    static let observedPermission = "observedPermission"
    /// The last preferences the server answered (`data` of GET/PUT preferences, JSON), for the
    /// subscriber it names.
    static let preferences = "preferences"
}
