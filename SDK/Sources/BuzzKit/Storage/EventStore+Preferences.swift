import BuzzKitWire

/// One queued preference change: what `preferences` was asked to change for a subscriber, with
/// the signature to send it with.
///
/// `revision` counts the changes merged into the row, so a send that was in flight while a later
/// change merged in deletes the row only if it sent the row's last revision (else the row is
/// sent again, which repeats values the server already has: a PUT names values, not toggles).
struct PendingPreferenceChange: Sendable, Hashable {
    var seq: Int64
    var subscriberId: String
    var signature: String
    var change: PreferenceChange
    var revision: Int64
    var attempts: Int
}

extension EventStore {
    /// Queues `change` and returns the row it is in: merged into the newest queued row when that
    /// row is the same subscriber's (the later values win; the newest signature is kept), else a
    /// new row. Merging only into the newest row keeps the order of changes across subscribers
    /// (alice, then bob, then alice again are three rows).
    func enqueuePreferenceChange(_ change: PreferenceChange, subscriberId: String, signature: String) async throws
        -> Int64
    {
        try await database.run { db in
            try db.transaction {
                if let last = try db.query(Self.preferenceSelect + " ORDER BY seq DESC LIMIT 1").first.flatMap(
                    Self.pendingPreferenceChange), last.subscriberId == subscriberId
                {
                    try db.query(
                        """
                        UPDATE preference_changes SET change = ?2, signature = ?3, revision = revision + 1 WHERE seq = ?1
                        """,
                        [.int(last.seq), .text(last.change.merged(with: change).jsonValue.jsonString), .text(signature)]
                    )
                    return last.seq
                }
                try db.query(
                    "INSERT INTO preference_changes (subscriber_id, signature, change) VALUES (?1, ?2, ?3)",
                    [.text(subscriberId), .text(signature), .text(change.jsonValue.jsonString)])
                return try db.query("SELECT last_insert_rowid()").first?.first?.int ?? 0
            }
        }
    }

    /// The oldest queued change, nil when there is none (a row that cannot be read is removed,
    /// so it cannot hold up the ones after it).
    func nextPreferenceChange() async throws -> PendingPreferenceChange? {
        try await database.run { db in
            while let row = try db.query(Self.preferenceSelect + " ORDER BY seq LIMIT 1").first {
                if let change = Self.pendingPreferenceChange(row) { return change }
                try db.query("DELETE FROM preference_changes WHERE seq = ?1", [row[0]])
            }
            return nil
        }
    }

    /// Every queued change of `subscriberId`, oldest first.
    func pendingPreferenceChanges(subscriberId: String) async throws -> [PendingPreferenceChange] {
        try await database.run { db in
            try db.query(Self.preferenceSelect + " WHERE subscriber_id = ?1 ORDER BY seq", [.text(subscriberId)])
                .compactMap(Self.pendingPreferenceChange)
        }
    }

    func preferenceChangeCount() async throws -> Int {
        try await database.run { db in
            Int(try db.query("SELECT count(*) FROM preference_changes").first?.first?.int ?? 0)
        }
    }

    /// Whether row `seq` is still queued.
    func preferenceChangeQueued(seq: Int64) async throws -> Bool {
        try await database.run { db in
            !(try db.query("SELECT 1 FROM preference_changes WHERE seq = ?1", [.int(seq)])).isEmpty
        }
    }

    /// The server applied `revision` of row `seq`: removes it, unless a later change merged into
    /// it meanwhile (then false, and the row is sent again).
    func completePreferenceChange(seq: Int64, revision: Int64) async throws -> Bool {
        try await database.run { db in
            try db.query(
                "DELETE FROM preference_changes WHERE seq = ?1 AND revision = ?2", [.int(seq), .int(revision)])
            return try db.query("SELECT 1 FROM preference_changes WHERE seq = ?1", [.int(seq)]).isEmpty
        }
    }

    /// Removes row `seq` whatever its revision (the server refused it, or it was given up).
    func dropPreferenceChange(seq: Int64) async throws {
        try await database.run { db in
            try db.query("DELETE FROM preference_changes WHERE seq = ?1", [.int(seq)])
        }
    }

    /// Counts a failed attempt of row `seq`; returns the attempts made so far.
    func recordFailedPreferenceAttempt(seq: Int64) async throws -> Int {
        try await database.run { db in
            try db.query("UPDATE preference_changes SET attempts = attempts + 1 WHERE seq = ?1", [.int(seq)])
            return Int(
                try db.query("SELECT attempts FROM preference_changes WHERE seq = ?1", [.int(seq)]).first?.first?.int
                    ?? 0)
        }
    }

    private static let preferenceSelect =
        "SELECT seq, subscriber_id, signature, change, revision, attempts FROM preference_changes"

    private static func pendingPreferenceChange(_ row: [SQLiteValue]) -> PendingPreferenceChange? {
        guard let seq = row[0].int, let subscriber = row[1].text, let signature = row[2].text, let text = row[3].text,
            let change = PreferenceChange(json: try? JSONValue.parse(text))
        else { return nil }
        return PendingPreferenceChange(
            seq: seq, subscriberId: subscriber, signature: signature, change: change, revision: row[4].int ?? 0,
            attempts: Int(row[5].int ?? 0))
    }
}
