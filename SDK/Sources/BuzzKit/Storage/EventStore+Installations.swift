import Foundation

/// One registered installation: the per-installation secret of an anonymous id (`bk_inst_...`)
/// and the subscriber it was identified as (nil before `identify`).
struct InstallationRecord: Sendable, Hashable {
    var anonymousId: String
    var token: String?
    var subscriberId: String?
}

extension EventStore {
    /// The installation registered for `anonymousId`, if any (its token may have been dropped).
    func installation(anonymousId: String) async throws -> InstallationRecord? {
        try await database.run { db in
            try db.query(
                "SELECT anonymous_id, token, subscriber_id FROM installations WHERE anonymous_id = ?1",
                [.text(anonymousId)]
            ).first.map(Self.installationRecord)
        }
    }

    /// The anonymous id of the most recent installation identified as `subscriberId`.
    func installationAnonymousId(subscriberId: String) async throws -> String? {
        try await database.run { db in
            try db.query(
                """
                SELECT anonymous_id FROM installations WHERE subscriber_id = ?1 AND token IS NOT NULL ORDER BY seq DESC LIMIT 1
                """, [.text(subscriberId)]
            ).first?.first?.text
        }
    }

    /// Whether an installation with a token is identified as `subscriberId` (synchronous: the
    /// notification service extension's short path).
    func installationIdentifiedNow(as subscriberId: String) throws -> Bool {
        try database.runSync { db in
            !(try db.query(
                "SELECT 1 FROM installations WHERE subscriber_id = ?1 AND token IS NOT NULL LIMIT 1",
                [.text(subscriberId)])).isEmpty
        }
    }

    /// Stores a freshly registered token for `anonymousId` (keeping the subscriber it had, if any).
    func storeInstallation(anonymousId: String, token: String) async throws {
        try await database.run { db in
            try db.query(
                """
                INSERT INTO installations (anonymous_id, token, seq)
                VALUES (?1, ?2, (SELECT coalesce(max(seq), 0) + 1 FROM installations))
                ON CONFLICT(anonymous_id) DO UPDATE SET token = excluded.token, seq = excluded.seq
                """, [.text(anonymousId), .text(token)])
        }
    }

    /// Forgets `token` for `anonymousId` (the server refused it), unless another process already
    /// replaced it. The subscriber it was identified as is kept, to identify the new one again.
    func dropInstallationToken(anonymousId: String, token: String) async throws {
        try await database.run { db in
            try db.query(
                "UPDATE installations SET token = NULL WHERE anonymous_id = ?1 AND token = ?2",
                [.text(anonymousId), .text(token)])
        }
    }

    /// Records that the installation of `anonymousId` was identified as `subscriberId`.
    func setInstallationSubscriber(_ subscriberId: String, anonymousId: String) async throws {
        try await database.run { db in
            try db.query(
                "UPDATE installations SET subscriber_id = ?2 WHERE anonymous_id = ?1",
                [.text(anonymousId), .text(subscriberId)])
        }
    }

    private static func installationRecord(_ row: [SQLiteValue]) -> InstallationRecord {
        InstallationRecord(anonymousId: row[0].text ?? "", token: row[1].text, subscriberId: row[2].text)
    }
}
