import BuzzKitContracts
import BuzzKitWebhooks

/// Where a message reaches its final state: the ONE place a message becomes `completed`.
///
/// A message is done when it is `fanned_out` (every delivery exists, recorded or pending in a
/// chunk) and no chunk holds a device of it any more: every delivery is decided. The test is a
/// row of `messages` plus an index probe of `delivery_chunks` per message, so it costs nothing per
/// delivery; it runs
/// - in the statement that records chunks (`Ledger.record`, `Ledger.recordLostLiveActivities`),
///   for the messages of the devices recorded: a direct batch's messages and a Live Activity
///   request's complete there, since each lies wholly in its chunk;
/// - right after a fan-out chunk's record (whose statement leaves it to this:
///   `RecordCompletion.afterCommit`) or a fan-out's end (`Ledger.completeIfDone`): two replicas
///   recording a message's last two chunks at once each see the other's chunk in their
///   statement's snapshot; each runs the test after its commit, and whichever runs second sees
///   both gone. The same holds between a fan-out's end and its last chunk's record;
/// - in the outbox sweeper (`Ledger.completeStragglers`), for a replica that stopped between its
///   commit and that second test: bounded, oldest first.
///
/// The completing `UPDATE` re-reads the row under its lock (`status = 'fanned_out'`), so a message
/// completes exactly once however many of these run at once.
///
/// Webhooks' `message.completed` is enqueued by `cte` itself (`events`, as `completed_events`),
/// in the statement that completes the message: once per message, since only one statement moves
/// it out of `fanned_out`; committed with the completion or not at all. Every statement that
/// completes messages includes `cte`, so a CTE added there that reads `completed` runs in the
/// same statement, for exactly the messages completed.
enum MessageCompletion {
    /// A CTE named `completed` (`id`, `message_time`, `tenant_id`, `completed_at`, `kind`): the messages matching
    /// `match` (a predicate on `m`, the messages row) that are `fanned_out` and have no pending
    /// chunk other than those of `recorded` (a `uuid[]` expression: chunks this same statement
    /// deletes, which its snapshot still shows), set `completed` as of now; followed by the CTE
    /// enqueuing their `message.completed` events.
    ///
    /// `directBatches`: also look for the messages in direct batches' chunks (`message_id` NULL,
    /// several messages each; read through `delivery_chunks_direct`). Not needed where every
    /// candidate's chunks carry its id (a fan-out's, a Live Activity request's) or where the
    /// candidates are exactly the messages of the direct batch being recorded.
    ///
    /// `written`: the deliveries this same statement inserts, as a FROM item aliased `w` with
    /// columns `id`, `message_id`, `status` (its snapshot does not show them), for the event's
    /// counts.
    ///
    /// The deliveries are read through functions (`bk_delivery_statuses`, `bk_delivery_exists`,
    /// migration 0027): written here, a subquery over the partitioned `deliveries` is planned and
    /// set up over every week each time the statement runs (the record statement runs per chunk),
    /// though it runs only for a message that completes and an endpoint that wants it.
    static func cte(match: String, recorded: String, directBatches: Bool = false, written: String? = nil) -> String {
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
                RETURNING m.id, m.message_time, m.tenant_id, m.completed_at, m.kind
            ), completed_events AS (
                \(events(from: "completed c", status: .completed, at: "c.completed_at", written: written))
            )
            """
    }

    /// The `message.completed` events of the messages of `from` (alias `c`, columns `id`,
    /// `message_time`, `tenant_id`, `kind`, and with `failed` also `error_code`, `error_message`), as the seam's
    /// INSERT (a CTE body). The event's id is derived from the message's, so a statement run
    /// again derives the same one. The counts are read only for messages an endpoint wants
    /// (the seam evaluates `data` for those rows alone): the deliveries the statement's snapshot
    /// shows, plus those of `written` it does not (the statement's own inserts; a delivery a
    /// racing replica recorded first counts once, as the ledger holds it once).
    static func events(from: String, status: MessageStatus, at: String, written: String?) -> String {
        let failed = status == .failed
        let own =
            written.map {
                """

                            UNION ALL
                            SELECT w.status FROM \($0) WHERE w.message_id = c.id
                              AND NOT bk_delivery_exists(w.id, c.message_time)
                """
            } ?? ""
        let data = WebhookEventData.messageCompleted(
            messageId: "c.id", kind: "c.kind", status: "'\(status.rawValue)'", sent: "n.sent", failed: "n.failed",
            expired: "n.expired", invalidToken: "n.invalid_token", errorCode: failed ? "c.error_code" : "NULL::text",
            errorMessage: failed ? "c.error_message" : "NULL::text", completedAt: at)
        func count(_ status: DeliveryStatus) -> String {
            "count(*) FILTER (WHERE x.status = '\(status.rawValue)')::int AS \(status.rawValue)"
        }
        return WebhookOutbox.insertSQL(
            WebhookEventSource(
                from: from, tenantId: "c.tenant_id", type: WebhookEventSource.literal(.messageCompleted),
                eventId: "bk_webhook_event_id('message.completed', c.id::text)", occurredAt: at,
                data: """
                    (SELECT \(data)
                     FROM (SELECT \(count(.sent)), \(count(.failed)), \(count(.expired)), \(count(.invalidToken))
                           FROM (SELECT d.status FROM bk_delivery_statuses(c.id, c.message_time) AS d(status)\(own)) x) n)
                    """))
    }
}
