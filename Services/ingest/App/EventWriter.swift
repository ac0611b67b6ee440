import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitWebhooks
import BuzzKitWire
import Foundation

/// Stores `bk:ingest` entries in Postgres, one transaction per batch of entries, and says which
/// events to publish on `bk:events`.
///
/// Almost every event arrives once, so the transaction first assumes they are all new:
/// 1. `aliasSQL` (only when entries came under anonymous ids): resolves each anonymous id once
///    through `subscriber_aliases`.
/// 2. `COPY` of the event ids into `event_ids`: batched inserts checked by its primary key, about
///    half the cost of claiming them with `INSERT ... ON CONFLICT`. A duplicate fails the COPY with
///    a unique violation and the whole transaction is done again the claiming way (below).
/// 3. `COPY` of the events into `events`: batched heap inserts (one WAL record per page of rows
///    instead of one per row), where `INSERT ... SELECT` inserted row by row.
/// 4. Only when events are receipts (`$notification.delivered/opened/dismissed`): `receiptsSQL`
///    joins them into `message_receipts` and the counters.
///
/// The claiming way (after a duplicate): `claimSQL` resolves anonymous ids and claims the ids with
/// `ON CONFLICT DO NOTHING`, answering only the exceptions: the resolved subscriber of each
/// anonymous entry, and each event that was not new (with whether this very stream entry had
/// stored it: a redelivery after a crash between COMMIT and XACK, whose events are published again
/// so a crash never loses a publication); then steps 3 and 4 for the new events.
/// Nothing is visible before COMMIT, so a failure anywhere leaves no trace (the batch is retried).
/// An event id repeated within one call is kept once (the first), before any statement.
struct EventWriter: Sendable {
    let postgres: PostgresClient

    struct Outcome: Sendable {
        /// `bk:events` entries (`PublishedEventBatch`), one per stream entry with events stored now
        /// (or stored before by the same stream entry).
        var toPublish: [[(String, [UInt8])]]
        /// Events in `toPublish`.
        var published: Int
        /// Events that were new in this call (the rest of the published ones are republications).
        var inserted: Int
        var duplicates: Int
    }

    static let eventColumns = [
        "tenant_id", "event_id", "name", "subscriber_id", "anonymous_id", "data", "occurred_at", "received_at"
    ]
    static let eventIDColumns = ["tenant_id", "event_id", "entry_id"]

    /// What the transaction found: anonymous entries' subscribers (entry index → subscriber id)
    /// and the events that were not new (position in `sent` → republish).
    private struct Stored: Sendable {
        var resolved: [Int: String] = [:]
        var skipped: [Int: Bool] = [:]
    }

    func write(_ entries: [(id: StreamEntryID, entry: IngestEntry)]) async throws -> Outcome {
        // (entry ordinal, event index) of every event sent, in statement order (entry by entry).
        var sent: [(entry: Int32, event: Int32)] = []
        var seen: Set<EventKey> = []
        let eventCount = entries.reduce(0) { $0 + $1.entry.events.count }
        sent.reserveCapacity(eventCount)
        seen.reserveCapacity(eventCount)
        var tenantOrdinals: [UUID: Int32] = [:]
        var duplicates = 0
        for (n, (_, entry)) in entries.enumerated() {
            let tenantOrdinal =
                tenantOrdinals[entry.tenantId]
                ?? {
                    let next = Int32(tenantOrdinals.count)
                    tenantOrdinals[entry.tenantId] = next
                    return next
                }()
            for (e, event) in entry.events.enumerated() {
                guard seen.insert(EventKey(tenant: tenantOrdinal, id: event.id)).inserted else {
                    duplicates += 1
                    continue
                }
                sent.append((Int32(n), Int32(e)))
            }
        }
        guard !sent.isEmpty else { return Outcome(toPublish: [], published: 0, inserted: 0, duplicates: duplicates) }

        let stored: Stored
        do {
            stored = try await storeAllNew(entries, sent: sent)
        } catch let error as PostgresError where error.code == .uniqueViolation {
            stored = try await storeClaiming(entries, sent: sent)
        }
        return outcome(entries, sent: sent, stored: stored, duplicates: duplicates)
    }

    /// Steps 1–4 of the type's description: every id is new, or the COPY fails.
    private func storeAllNew(
        _ entries: [(id: StreamEntryID, entry: IngestEntry)],
        sent: [(entry: Int32, event: Int32)]
    ) async throws -> Stored {
        try await postgres.withTransaction { connection in
            var stored = Stored()
            if entries.contains(where: { $0.entry.identity.isAnonymous }) {
                for row in try await connection.query(Self.aliasSQL, EventClaimArrays.aliasParameters(entries)) {
                    let (ordinal, subscriber) = try row.decode((Int32, String).self)
                    stored.resolved[Int(ordinal) - 1] = subscriber
                }
            }
            var ids = PostgresCopyText(capacity: sent.count * 80)
            // The entry's tenant and stream id, encoded once per entry.
            var current: (entry: Int32, tenant: [UInt8], streamID: [UInt8]) = (-1, [], [])
            for position in sent {
                if current.entry != position.entry {
                    let (streamID, entry) = entries[Int(position.entry)]
                    current = (
                        position.entry, Array(entry.tenantId.lowercasedText.utf8), Array(streamID.description.utf8)
                    )
                }
                ids.appendUnescaped(bytes: current.tenant)
                ids.append(entries[Int(position.entry)].entry.events[Int(position.event)].id)
                ids.appendUnescaped(bytes: current.streamID)
                ids.endRow()
            }
            _ = try await connection.copy(into: "event_ids", columns: Self.eventIDColumns, text: ids)
            try await insertEvents(entries, sent: sent, stored: stored, connection: connection)
            return stored
        }
    }

    /// The claiming way, after a duplicate made `storeAllNew` fail.
    private func storeClaiming(
        _ entries: [(id: StreamEntryID, entry: IngestEntry)],
        sent: [(entry: Int32, event: Int32)]
    ) async throws -> Stored {
        let arrays = EventClaimArrays(entries: entries, sent: sent)
        return try await postgres.withTransaction { connection in
            var stored = Stored()
            // Exceptions only: 's' rows (entry ordinal, resolved subscriber) for anonymous entries,
            // 'd' rows (event ordinal, 'republish' or NULL) for events that were not new.
            for row in try await connection.query(Self.claimSQL, arrays.parameters) {
                let (kind, ordinal, value) = try row.decode((String, Int32, String?).self)
                if kind == "s" {
                    stored.resolved[Int(ordinal) - 1] = value
                } else {
                    stored.skipped[Int(ordinal) - 1] = value == "republish"
                }
            }
            try await insertEvents(entries, sent: sent, stored: stored, connection: connection)
            return stored
        }
    }

    /// Steps 3 and 4: the events of `sent` that were not skipped, and their receipts.
    private func insertEvents(
        _ entries: [(id: StreamEntryID, entry: IngestEntry)], sent: [(entry: Int32, event: Int32)],
        stored: Stored, connection: PostgresConnection
    ) async throws {
        var copyRows = EventCopyRows(capacity: (sent.count - stored.skipped.count) * 256)
        var receipts = EventReceiptArrays()
        for (k, position) in sent.enumerated() where stored.skipped[k] == nil {
            let n = Int(position.entry)
            let entry = entries[n].entry
            let event = entry.events[Int(position.event)]
            let subscriber = stored.resolved[n] ?? entry.identity.value
            copyRows.append(entryIndex: n, entry: entry, subscriberId: subscriber, event: event)
            if EventReceiptArrays.isReceipt(event.name) {
                receipts.append(tenant: entry.tenantId, subscriberId: subscriber, event: event)
            }
        }
        if !copyRows.text.isEmpty {
            _ = try await connection.copy(into: "events", columns: Self.eventColumns, text: copyRows.text)
        }
        if !receipts.isEmpty {
            try await connection.execute(Self.receiptsSQL, receipts.parameters)
        }
    }

    /// One `bk:events` entry per stream entry with events to publish, in stream order.
    private func outcome(
        _ entries: [(id: StreamEntryID, entry: IngestEntry)], sent: [(entry: Int32, event: Int32)],
        stored: Stored, duplicates: Int
    ) -> Outcome {
        var outcome = Outcome(toPublish: [], published: 0, inserted: 0, duplicates: duplicates)
        var pending: (entry: Int, events: [IngestEntry.Event])?
        func flush() {
            guard let (n, events) = pending, !events.isEmpty else { return }
            let entry = entries[n].entry
            let batch = PublishedEventBatch(
                tenantId: entry.tenantId, subscriberId: stored.resolved[n] ?? entry.identity.value,
                anonymousId: entry.identity.isAnonymous ? entry.identity.value : nil,
                receivedAtMicroseconds: entry.receivedAtMicroseconds, events: events)
            outcome.toPublish.append(batch.fields)
            outcome.published += events.count
        }
        for (k, position) in sent.enumerated() {
            if let republish = stored.skipped[k] {
                guard republish else {
                    outcome.duplicates += 1
                    continue
                }
            } else {
                outcome.inserted += 1
            }
            let n = Int(position.entry)
            if pending?.entry != n {
                flush()
                pending = (n, [])
            }
            pending?.events.append(entries[n].entry.events[Int(position.event)])
        }
        flush()
        return outcome
    }

    private struct EventKey: Hashable {
        var tenant: Int32
        var id: String
    }

    /// The subscriber each anonymous entry's id is aliased to: $1 tenant uuid[], $2 anonymous id
    /// (NULL for a subscriber's entry), one element per entry. Rows (entry ordinal, subscriber id)
    /// for the aliased ones only.
    static let aliasSQL = """
        SELECT e.n::int4, a.subscriber_id
        FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS e(tenant_id, anonymous_id, n)
        JOIN subscriber_aliases a ON a.tenant_id = e.tenant_id AND a.anonymous_id = e.anonymous_id
        """

    /// The webhooks seam over the receipts just inserted: the first delivered and opened receipt
    /// of a message for a subscriber (the one the counters count), its id derived from that key.
    static let webhookEvents = WebhookOutbox.insertSQL(
        WebhookEventSource(
            from: "receipts r", tenantId: "r.tenant_id", type: "'receipt.' || r.kind",
            eventId:
                "bk_webhook_event_id('receipt', r.tenant_id || ':' || r.message_id || ':' || r.kind || ':' || r.subscriber_id)",
            occurredAt: "r.occurred_at",
            data: WebhookEventData.receipt(
                messageId: "r.message_id", subscriberId: "r.subscriber_id", eventId: "r.event_id",
                occurredAt: "r.occurred_at"),
            filter: "r.kind IN ('delivered', 'opened')"))

    /// Entries: $1 tenant uuid[], $2 subscriber id (NULL for anonymous), $3 anonymous id, $4 stream
    /// entry id. Events: $5 entry ordinal (1-based) int4[], $6 event id.
    /// Rows (kind, ordinal, value): ('s', entry, resolved subscriber) per anonymous entry;
    /// ('d', event, 'republish' | NULL) per event not claimed now.
    static let claimSQL = """
        WITH entry AS (
            SELECT e.n, e.tenant_id, COALESCE(e.subscriber_id, a.subscriber_id, e.anonymous_id) AS subscriber_id,
                   e.anonymous_id, e.entry_id
            FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY
                 AS e(tenant_id, subscriber_id, anonymous_id, entry_id, n)
            LEFT JOIN subscriber_aliases a
                   ON e.anonymous_id IS NOT NULL AND a.tenant_id = e.tenant_id AND a.anonymous_id = e.anonymous_id
        ),
        input AS (
            SELECT i.k, en.tenant_id, i.event_id, en.entry_id
            FROM unnest($5::int4[], $6::text[]) WITH ORDINALITY AS i(n, event_id, k)
            JOIN entry en ON en.n = i.n
        ),
        claimed AS (
            INSERT INTO event_ids (tenant_id, event_id, entry_id)
            SELECT tenant_id, event_id, entry_id FROM input
            ON CONFLICT DO NOTHING
            RETURNING tenant_id, event_id
        ),
        skipped AS MATERIALIZED (
            SELECT i.k, i.tenant_id, i.event_id, i.entry_id FROM input i
            WHERE NOT EXISTS (SELECT 1 FROM claimed c WHERE c.tenant_id = i.tenant_id AND c.event_id = i.event_id)
        )
        SELECT 's', e.n::int4, e.subscriber_id FROM entry e WHERE e.anonymous_id IS NOT NULL
        UNION ALL
        -- event_ids as it was before this statement: a row there with this entry id was stored by
        -- an earlier delivery of the same stream entry.
        SELECT 'd', s.k::int4,
               (SELECT 'republish' FROM event_ids x
                WHERE x.tenant_id = s.tenant_id AND x.event_id = s.event_id AND x.entry_id = s.entry_id)
        FROM skipped s
        """

    /// The receipts among the events just stored: $1 tenant uuid[], $2 subscriber, $3 event id,
    /// $4 name, $5 data jsonb[], $6 occurred µs int8[]. One row per (message, kind, subscriber),
    /// the earliest; counters incremented by the rows newly inserted; `receipt.delivered` and
    /// `receipt.opened` webhook events for the rows newly inserted (`webhookEvents`), in the same statement.
    static let receiptsSQL = """
        WITH fresh AS (
            SELECT f.tenant_id, f.subscriber_id, f.event_id, f.name, f.data,
                   timestamptz 'epoch' + f.occurred_us * interval '1 microsecond' AS occurred_at
            FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::int8[])
                 AS f(tenant_id, subscriber_id, event_id, name, data, occurred_us)
        ),
        receipts AS (
            INSERT INTO message_receipts (tenant_id, message_id, kind, subscriber_id, event_id, occurred_at)
            SELECT DISTINCT ON (f.tenant_id, f.data->>'messageId', k.kind, f.subscriber_id)
                   f.tenant_id, f.data->>'messageId', k.kind, f.subscriber_id, f.event_id, f.occurred_at
            FROM fresh f
            JOIN (VALUES ('$notification.delivered', 'delivered'), ('$notification.opened', 'opened'),
                         ('$notification.dismissed', 'dismissed')) AS k(name, kind) ON k.name = f.name
            WHERE jsonb_typeof(f.data->'messageId') = 'string'
            ORDER BY f.tenant_id, f.data->>'messageId', k.kind, f.subscriber_id, f.occurred_at
            ON CONFLICT DO NOTHING
            RETURNING tenant_id, message_id, kind, subscriber_id, event_id, occurred_at
        ),
        webhook_events AS (\(webhookEvents)
        )
        INSERT INTO message_receipt_counts AS m (tenant_id, message_id, delivered, opened, dismissed)
        SELECT tenant_id, message_id,
               count(*) FILTER (WHERE kind = 'delivered'), count(*) FILTER (WHERE kind = 'opened'),
               count(*) FILTER (WHERE kind = 'dismissed')
        FROM receipts GROUP BY tenant_id, message_id ORDER BY tenant_id, message_id
        ON CONFLICT (tenant_id, message_id) DO UPDATE
           SET delivered = m.delivered + EXCLUDED.delivered, opened = m.opened + EXCLUDED.opened,
               dismissed = m.dismissed + EXCLUDED.dismissed, updated_at = now()
        """
}
