import BuzzKitPostgres
import Foundation

/// Completing messages outside the statements that record chunks (see `MessageCompletion`).
extension Ledger {
    /// Completes those of `messages` that are `fanned_out` with no pending chunk, after the
    /// caller's own write committed: a fan-out chunk's record that could not complete its message
    /// in its statement, a fan-out's end, a direct batch's messages without any device. Answers
    /// the messages it completed. Messages of direct batches still pending are not for this: their
    /// chunks do not carry their id (their record completes them).
    ///
    /// A message with a chunk still pending cannot complete here, and is the usual case (a
    /// fan-out's chunks but its last): that is asked first, with one probe of
    /// `delivery_chunks_message` per message (`pendingSQL`), and the completing statement (planned
    /// over the partitioned `messages`, with its events) runs only for the others. Nothing is lost
    /// by asking in two snapshots: the chunk seen pending is deleted by a record that commits after
    /// this probe, and that record's own test after its commit sees every deletion before it.
    @discardableResult
    public func completeIfDone(_ messages: [UUID]) async throws -> Set<UUID> {
        guard !messages.isEmpty else { return [] }
        if messages.count == 1 {
            let rows = try await postgres.query(Self.pendingOneSQL, [messages[0]])
            guard try rows.first?.decode(Bool.self, at: 0) == false else { return [] }
            return try await complete(messages)
        }
        let rows = try await postgres.query(Self.pendingSQL, [messages])
        guard let settled = try rows.first?.decode([UUID]?.self, at: 0), !settled.isEmpty else { return [] }
        return try await complete(settled)
    }

    /// `$1` messages: those of them no chunk holds (`NULL` when none).
    static let pendingSQL = """
        SELECT array_agg(m.id) FROM unnest($1::uuid[]) AS m(id)
        WHERE NOT EXISTS (SELECT 1 FROM delivery_chunks k WHERE k.message_id = m.id)
        """

    /// `$1` a message: whether a chunk holds it. `pendingSQL` for the usual one message, written
    /// so that Postgres keeps one generic plan for it (over an array it planned every call).
    static let pendingOneSQL = "SELECT EXISTS (SELECT 1 FROM delivery_chunks k WHERE k.message_id = $1::uuid)"

    /// The completing statement of `completeIfDone`.
    private func complete(_ messages: [UUID]) async throws -> Set<UUID> {
        let range = LedgerTime.Range(of: messages)
        return try Self.completed(
            try await postgres.query(
                """
                WITH \(MessageCompletion.cte(
                    match: "m.id = ANY($1::uuid[]) AND \(LedgerTime.prune("m.message_time", lower: "$2", upper: "$3"))",
                    recorded: "'{}'::uuid[]"))
                SELECT id FROM completed
                """,
                [messages, range.lower, range.upper]))
    }

    /// The stragglers: up to `limit` messages `fanned_out` for longer than `olderThan` with
    /// nothing pending (in their own chunks or in a direct batch's), oldest first, completed. They
    /// are left by a replica that stopped between a commit and `completeIfDone`. Read through
    /// `messages_fanned_out`. Answers how many it completed.
    @discardableResult
    public func completeStragglers(olderThan: Duration, limit: Int = 500) async throws -> Int {
        let candidates = """
            m.id IN (SELECT s.id FROM messages s
                     WHERE s.status = 'fanned_out' AND s.updated_at < now() - make_interval(secs => $1)
                       AND NOT EXISTS (SELECT 1 FROM delivery_chunks k WHERE k.message_id = s.id)
                       AND NOT EXISTS (SELECT 1 FROM delivery_chunks b
                                       WHERE b.message_id IS NULL AND b.tenant_id = s.tenant_id AND s.id = ANY(b.message_ids))
                     ORDER BY s.updated_at LIMIT $2)
            """
        let rows = try await postgres.query(
            """
            WITH \(MessageCompletion.cte(match: candidates, recorded: "'{}'::uuid[]", directBatches: true))
            SELECT count(*)::int FROM completed
            """, [olderThan.sqlSeconds, limit])
        return try rows.first?.decode(Int.self, at: 0) ?? 0
    }
}
