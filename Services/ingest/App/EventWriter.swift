import Foundation
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitContracts
import BuzzKitRedis
import BuzzKitWire

/// Stores `bk:ingest` entries in Postgres in one statement per batch of entries, and says which
/// events to publish on `bk:events`.
///
/// One round trip, one transaction: the entries (tenant, identity, receive time, stream entry id)
/// and their events (entry ordinal, id, name, data, timestamp) go as arrays (`unnest`), written as
/// bytes (`EventWriterArrays`). Anonymous ids are resolved once per entry through
/// `subscriber_aliases`; ids are claimed in `event_ids` (`ON CONFLICT DO NOTHING`), only newly
/// claimed events are inserted into `events` and counted as receipts. The statement answers only
/// the exceptions: the resolved subscriber of each anonymous entry, and each event that was not
/// new (with whether this very stream entry had stored it: a redelivery after a crash between
/// COMMIT and XACK, whose events are published again so a crash never loses a publication).
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

    func write(_ entries: [(id: StreamEntryID, entry: IngestEntry)]) async throws -> Outcome {
        var arrays = EventWriterArrays()
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
            arrays.appendEntry(tenant: entry.tenantId, identity: entry.identity,
                               receivedMicroseconds: entry.receivedAtMicroseconds, entryID: streamID.description)
            for (e, event) in entry.events.enumerated() {
                guard seen.insert(EventKey(tenant: tenantOrdinal, id: event.id)).inserted else { duplicates += 1; continue }
                arrays.appendEvent(entryOrdinal: n + 1, id: event.id, name: event.name, dataJSON: event.dataJSON,
                                   timestampMicroseconds: event.timestampMicroseconds)
                sent.append((Int32(n), Int32(e)))
            }
        }
        guard !sent.isEmpty else { return Outcome(toPublish: [], inserted: 0, duplicates: duplicates) }

        let rows = try await postgres.query(Self.sql, arrays.parameters)
        // Exceptions only: 's' rows (entry ordinal, resolved subscriber) for anonymous entries,
        // 'd' rows (event ordinal, 'republish' or NULL) for events that were not new.
        var resolved: [Int: String] = [:]
        var skipped: [Int: Bool] = [:]
        for row in rows {
            let (kind, ordinal, value) = try row.decode((String, Int32, String?).self)
            if kind == "s" { resolved[Int(ordinal) - 1] = value } else { skipped[Int(ordinal) - 1] = value == "republish" }
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

    /// Entries: $1 tenant uuid[], $2 subscriber id (NULL for anonymous), $3 anonymous id, $4
    /// received µs int8[], $5 stream entry id. Events: $6 entry ordinal (1-based) int4[], $7 event
    /// id, $8 name, $9 data jsonb[], $10 occurred µs int8[].
    /// Rows (kind, ordinal, value): ('s', entry, resolved subscriber) per anonymous entry;
    /// ('d', event, 'republish' | NULL) per event not stored now.
    static let sql = """
        WITH entry AS (
            SELECT e.n, e.tenant_id, COALESCE(e.subscriber_id, a.subscriber_id, e.anonymous_id) AS subscriber_id,
                   e.anonymous_id, timestamptz 'epoch' + e.received_us * interval '1 microsecond' AS received_at, e.entry_id
            FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int8[], $5::text[]) WITH ORDINALITY
                 AS e(tenant_id, subscriber_id, anonymous_id, received_us, entry_id, n)
            LEFT JOIN subscriber_aliases a
                   ON e.anonymous_id IS NOT NULL AND a.tenant_id = e.tenant_id AND a.anonymous_id = e.anonymous_id
        ),
        input AS (
            SELECT i.k, en.tenant_id, i.event_id, i.name, en.subscriber_id, en.anonymous_id, i.data,
                   timestamptz 'epoch' + i.occurred_us * interval '1 microsecond' AS occurred_at, en.received_at, en.entry_id
            FROM unnest($6::int4[], $7::text[], $8::text[], $9::jsonb[], $10::int8[]) WITH ORDINALITY
                 AS i(n, event_id, name, data, occurred_us, k)
            JOIN entry en ON en.n = i.n
        ),
        claimed AS (
            INSERT INTO event_ids (tenant_id, event_id, entry_id)
            SELECT tenant_id, event_id, entry_id FROM input
            ON CONFLICT DO NOTHING
            RETURNING tenant_id, event_id
        ),
        fresh AS (
            SELECT i.* FROM input i JOIN claimed c ON c.tenant_id = i.tenant_id AND c.event_id = i.event_id
        ),
        stored AS (
            INSERT INTO events (tenant_id, event_id, name, subscriber_id, anonymous_id, data, occurred_at, received_at)
            SELECT tenant_id, event_id, name, subscriber_id, anonymous_id, data, occurred_at, received_at FROM fresh
        ),
        receipts AS (
            INSERT INTO message_receipts (tenant_id, message_id, kind, subscriber_id, event_id, occurred_at)
            SELECT DISTINCT ON (f.tenant_id, f.data->>'messageId', k.kind, f.subscriber_id)
                   f.tenant_id, f.data->>'messageId', k.kind, f.subscriber_id, f.event_id, f.occurred_at
            FROM fresh f
            JOIN (VALUES ('$notification.delivered', 'delivered'), ('$notification.opened', 'opened'),
                         ('$notification.dismissed', 'dismissed')) AS k(name, kind) ON k.name = f.name
            WHERE f.name IN ('$notification.delivered', '$notification.opened', '$notification.dismissed')
              AND jsonb_typeof(f.data->'messageId') = 'string'
            ORDER BY f.tenant_id, f.data->>'messageId', k.kind, f.subscriber_id, f.occurred_at
            ON CONFLICT DO NOTHING
            RETURNING tenant_id, message_id, kind
        ),
        counted AS (
            INSERT INTO message_receipt_counts AS m (tenant_id, message_id, delivered, opened, dismissed)
            SELECT tenant_id, message_id,
                   count(*) FILTER (WHERE kind = 'delivered'), count(*) FILTER (WHERE kind = 'opened'),
                   count(*) FILTER (WHERE kind = 'dismissed')
            FROM receipts GROUP BY tenant_id, message_id ORDER BY tenant_id, message_id
            ON CONFLICT (tenant_id, message_id) DO UPDATE
               SET delivered = m.delivered + EXCLUDED.delivered, opened = m.opened + EXCLUDED.opened,
                   dismissed = m.dismissed + EXCLUDED.dismissed, updated_at = now()
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
}
