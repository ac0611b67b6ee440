/// Where a message reaches its final state: the ONE place a message becomes `completed`.
///
/// A message is done when it is `fanned_out` (every delivery exists, recorded or pending in a
/// chunk) and no chunk holds a device of it any more: every delivery is decided. The test is a
/// row of `messages` plus an index probe of `delivery_chunks` per message, so it costs nothing per
/// delivery; it runs
/// - in the statement that records chunks (`Ledger.record`, `Ledger.recordLostLiveActivities`),
///   for the messages of the devices recorded: a direct batch's messages and a Live Activity
///   request's complete there, since each lies wholly in its chunk;
/// - right after a fan-out chunk's record or a fan-out's end, when that statement could not tell
///   (`Ledger.completeIfDone`): two replicas recording a message's last two chunks at once each
///   see the other's chunk in their statement's snapshot, so neither completes it there; each
///   then runs the test again after its commit, and whichever runs second sees both gone. The
///   same holds between a fan-out's end and its last chunk's record;
/// - in the outbox sweeper (`Ledger.completeStragglers`), for a replica that stopped between its
///   commit and that second test: bounded, oldest first.
///
/// The completing `UPDATE` re-reads the row under its lock (`status = 'fanned_out'`), so a message
/// completes exactly once however many of these run at once.
///
/// The seam for what must happen when a message completes (webhooks' `message.completed`): every
/// statement that completes messages includes `cte`, so a CTE added there that reads `completed`
/// runs in the same statement, for exactly the messages completed.
enum MessageCompletion {
    /// A CTE named `completed` (`id`, `tenant_id`, `completed_at`): the messages matching `match`
    /// (a predicate on `m`, the messages row) that are `fanned_out` and have no pending chunk
    /// other than those of `recorded` (a `uuid[]` expression: chunks this same statement deletes,
    /// which its snapshot still shows), set `completed` as of now.
    ///
    /// `directBatches`: also look for the messages in direct batches' chunks (`message_id` NULL,
    /// several messages each; read through `delivery_chunks_direct`). Not needed where every
    /// candidate's chunks carry its id (a fan-out's, a Live Activity request's) or where the
    /// candidates are exactly the messages of the direct batch being recorded.
    static func cte(match: String, recorded: String, directBatches: Bool = false) -> String {
        let direct = """
             AND NOT EXISTS (SELECT 1 FROM delivery_chunks b
                             WHERE b.message_id IS NULL AND b.tenant_id = m.tenant_id AND m.id = ANY(b.message_ids)
                               AND b.id <> ALL(\(recorded)))
            """
        return """
            completed AS (
                UPDATE messages m SET status = 'completed', completed_at = now(), updated_at = now()
                WHERE \(match) AND m.status = 'fanned_out'
                  AND NOT EXISTS (SELECT 1 FROM delivery_chunks k WHERE k.message_id = m.id AND k.id <> ALL(\(recorded)))\(directBatches ? direct : "")
                RETURNING m.id, m.tenant_id, m.completed_at
            )
            """
    }
}
