import Foundation
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitContracts
import BuzzKitRedis
import BuzzKitWire

/// Stores `bk:ingest` entries in Postgres, one transaction per batch of entries, and says which
/// events to publish on `bk:events`.
///
/// The transaction, on one connection:
/// 1. `claimSQL`: the entries (tenant, identity, stream entry id) and the event ids go as arrays
///    (`unnest`, written as bytes by `EventWriterArrays`); anonymous ids are resolved once per
///    entry through `subscriber_aliases`; ids are claimed in `event_ids` (`ON CONFLICT DO
///    NOTHING`). It answers only the exceptions: the resolved subscriber of each anonymous entry,
///    and each event that was not new (with whether this very stream entry had stored it: a
///    redelivery after a crash between COMMIT and XACK, whose events are published again so a
///    crash never loses a publication).
/// 2. `COPY` of the newly claimed events into `events`: batched heap inserts (one WAL record per
///    page of rows instead of one per row), where `INSERT ... SELECT` inserted row by row.
/// 3. Only when new events are receipts (`$notification.delivered/opened/dismissed`):
///    `receiptsSQL` joins them into `message_receipts` and the counters.
/// Nothing is visible before COMMIT, so a failure anywhere leaves no trace (the batch is retried).
/// An event id repeated within one call is kept once (the first), before the statement.
struct EventWriter: Sendable {
    let postgres: PostgresClient

    struct Outcome: Sendable {
        /// `bk:events` entries for the events stored (or stored before by the same stream entry).
        var toPublish: [[(String, [UInt8])]]
        /// Events that were new in this call (the rest of `toPublish` are republications).
        var inserted: Int
        var duplicates: Int
    }

    static let eventColumns = ["tenant_id", "event_id", "name", "subscriber_id", "anonymous_id", "data", "occurred_at", "received_at"]

    func write(_ entries: [(id: StreamEntryID, entry: IngestEntry)]) async throws -> Outcome {
        var arrays = EventClaimArrays()
        // (entry ordinal, event index) of every event sent, in statement order.
        var sent: [(entry: Int32, event: Int32)] = []
        var seen: Set<EventKey> = []
        let eventCount = entries.reduce(0) { $0 + $1.entry.events.count }
        sent.reserveCapacity(eventCount)
        seen.reserveCapacity(eventCount)
        var tenantOrdinals: [UUID: Int32] = [:]
        var duplicates = 0
        for (n, (streamID, entry)) in entries.enumerated() {
            let tenantOrdinal = tenantOrdinals[entry.tenantId] ?? {
                let next = Int32(tenantOrdinals.count)
                tenantOrdinals[entry.tenantId] = next
                return next
            }()
            arrays.appendEntry(tenant: entry.tenantId, identity: entry.identity, entryID: streamID.description)
            for (e, event) in entry.events.enumerated() {
                guard seen.insert(EventKey(tenant: tenantOrdinal, id: event.id)).inserted else { duplicates += 1; continue }
                arrays.appendEvent(entryOrdinal: n + 1, id: event.id)
                sent.append((Int32(n), Int32(e)))
            }
        }
        guard !sent.isEmpty else { return Outcome(toPublish: [], inserted: 0, duplicates: duplicates) }

        let parameters = arrays.parameters
        let (resolved, skipped) = try await postgres.withTransaction { connection in
            let rows = try await connection.query(Self.claimSQL, parameters)
            // Exceptions only: 's' rows (entry ordinal, resolved subscriber) for anonymous entries,
            // 'd' rows (event ordinal, 'republish' or NULL) for events that were not new.
            var resolved: [Int: String] = [:]
            var skipped: [Int: Bool] = [:]
            for row in rows {
                let (kind, ordinal, value) = try row.decode((String, Int32, String?).self)
                if kind == "s" { resolved[Int(ordinal) - 1] = value } else { skipped[Int(ordinal) - 1] = value == "republish" }
            }
            var copyRows = EventCopyRows(capacity: (sent.count - skipped.count) * 256)
            var receipts = EventReceiptArrays()
            for (k, position) in sent.enumerated() where skipped[k] == nil {
                let n = Int(position.entry)
                let entry = entries[n].entry
                let event = entry.events[Int(position.event)]
                let subscriber = resolved[n] ?? entry.identity.value
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
            return (resolved, skipped)
        }

        var outcome = Outcome(toPublish: [], inserted: 0, duplicates: duplicates)
        outcome.toPublish.reserveCapacity(sent.count)
        var prefixes: [Int: PublishedEventFields] = [:]
        for (k, position) in sent.enumerated() {
            if let republish = skipped[k] {
                guard republish else { outcome.duplicates += 1; continue }
            } else {
                outcome.inserted += 1
            }
            let n = Int(position.entry)
            let entry = entries[n].entry
            let fields = prefixes[n] ?? {
                let made = PublishedEventFields(entry: entry, subscriberId: resolved[n] ?? entry.identity.value)
                prefixes[n] = made
                return made
            }()
            outcome.toPublish.append(fields.fields(for: entry.events[Int(position.event)]))
        }
        return outcome
    }

    private struct EventKey: Hashable {
        var tenant: Int32
        var id: String
    }

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
    /// the earliest; counters incremented by the rows newly inserted.
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
            RETURNING tenant_id, message_id, kind
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
