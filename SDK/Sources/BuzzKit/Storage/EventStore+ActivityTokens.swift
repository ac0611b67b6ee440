import Foundation

/// A Live Activity token (or an activity's end) kept until the server has it.
struct ActivityTokenRecord: Sendable, Hashable {
    enum Kind: String, Sendable {
        /// An activity's push token; `key` is the activity id.
        case activity
        /// An attributes type's push-to-start token; `key` is the attributes type.
        case pushToStart = "start"
        /// An ended or dismissed activity the server must stop updating; `key` is the activity id.
        case end
    }

    var kind: Kind
    var key: String
    var attributesType: String
    /// Hex; nil for `end`.
    var token: String?
}

extension EventStore {
    /// Keeps a token (or an end) to send, marked pending. Replaces the previous one of the same key.
    func putActivityToken(_ record: ActivityTokenRecord) async throws {
        try await database.run { db in
            try db.transaction {
                if record.kind == .end {
                    try db.query(
                        "DELETE FROM activity_tokens WHERE kind = 'activity' AND key = ?1", [.text(record.key)])
                }
                try db.query(
                    """
                    INSERT INTO activity_tokens (kind, key, attributes_type, token, pending) VALUES (?1, ?2, ?3, ?4, 1)
                    ON CONFLICT(kind, key) DO UPDATE SET attributes_type = excluded.attributes_type,
                        token = excluded.token, pending = 1
                    """,
                    [
                        .text(record.kind.rawValue), .text(record.key), .text(record.attributesType),
                        record.token.map(SQLiteValue.text) ?? .null
                    ])
            }
        }
    }

    /// What still has to reach the server, oldest kinds first (tokens before ends).
    func pendingActivityTokens() async throws -> [ActivityTokenRecord] {
        try await database.run { db in
            try db.query(
                """
                SELECT kind, key, attributes_type, token FROM activity_tokens WHERE pending = 1
                ORDER BY CASE kind WHEN 'activity' THEN 0 WHEN 'start' THEN 1 ELSE 2 END, key
                """
            ).compactMap { row in
                guard let kind = row[0].text.flatMap(ActivityTokenRecord.Kind.init(rawValue:)),
                    let key = row[1].text, let type = row[2].text
                else { return nil }
                return ActivityTokenRecord(kind: kind, key: key, attributesType: type, token: row[3].text)
            }
        }
    }

    /// The server has it: a token stays (for a later re-registration), an end is forgotten.
    func activityTokenSent(_ record: ActivityTokenRecord) async throws {
        try await database.run { db in
            if record.kind == .end {
                try db.query("DELETE FROM activity_tokens WHERE kind = 'end' AND key = ?1", [.text(record.key)])
            } else {
                try db.query(
                    """
                    UPDATE activity_tokens SET pending = 0 WHERE kind = ?1 AND key = ?2 AND token IS ?3
                    """, [.text(record.kind.rawValue), .text(record.key), record.token.map(SQLiteValue.text) ?? .null])
            }
        }
    }

    /// Marks every kept token pending again (after `identify`: tokens belong to the subscriber).
    func markActivityTokensPending() async throws {
        try await database.run { db in try db.query("UPDATE activity_tokens SET pending = 1 WHERE kind <> 'end'") }
    }
}
