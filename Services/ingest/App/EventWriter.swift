import Foundation
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitContracts
import BuzzKitRedis
import BuzzKitWire

/// Stores `bk:ingest` entries in Postgres in one statement per batch of entries, and says which
/// events to publish on `bk:events`.
///
/// One round trip: the events are passed as arrays (`unnest`), anonymous ids are resolved through
/// `subscriber_aliases`, ids are claimed in `event_ids` (`ON CONFLICT`), only newly claimed events
/// are inserted into `events` and counted as receipts, all in one transaction. An event is "to
/// publish" when it is new, or when it was stored by this very stream entry before (a redelivery
/// after a crash between COMMIT and XACK), so a crash never loses the `bk:events` publication.
struct EventWriter: Sendable {
    let postgres: PostgresClient

    /// An event the statement stored (or had stored from the same entry): publish it.
    struct Outcome: Sendable {
        var toPublish: [PublishedEvent]
        /// Events that were new in this call (the rest of `toPublish` are republications).
        var inserted: Int
        var duplicates: Int
    }

    func write(_ entries: [(id: StreamEntryID, entry: IngestEntry)]) async throws -> Outcome {
        var tenants: [String?] = [], ids: [String?] = [], names: [String?] = [], subscribers: [String?] = []
        var anonymous: [String?] = [], data: [String?] = [], occurred: [String?] = [], received: [String?] = []
        var entryIDs: [String?] = []
        var byKey: [EventKey: (IngestEntry, IngestEntry.Event)] = [:]
        for (streamID, entry) in entries {
            let tenant = entry.tenantId.uuidString.lowercased()
            for event in entry.events {
                tenants.append(tenant)
                ids.append(event.id)
                names.append(event.name)
                switch entry.identity {
                case .subscriber(let id): subscribers.append(id); anonymous.append(nil)
                case .anonymous(let id): subscribers.append(nil); anonymous.append(id)
                }
                data.append(String(decoding: event.dataJSON, as: UTF8.self))
                occurred.append(String(event.timestampMicroseconds))
                received.append(String(entry.receivedAtMicroseconds))
                entryIDs.append(streamID.description)
                byKey[EventKey(tenant: entry.tenantId, id: event.id)] = (entry, event)
            }
        }
        guard !ids.isEmpty else { return Outcome(toPublish: [], inserted: 0, duplicates: 0) }
        let rows = try await postgres.query(Self.sql, [tenants, ids, names, subscribers, anonymous, data, occurred, received, entryIDs])
        var outcome = Outcome(toPublish: [], inserted: 0, duplicates: 0)
        outcome.toPublish.reserveCapacity(rows.count)
        for row in rows {
            let (tenantText, eventID, subscriber, fresh) = try row.decode((String, String, String, Bool).self)
            guard let tenant = UUID(uuidString: tenantText), let (entry, event) = byKey[EventKey(tenant: tenant, id: eventID)] else { continue }
            if fresh { outcome.inserted += 1 }
            outcome.toPublish.append(PublishedEvent(
                tenantId: tenant, eventId: eventID, name: event.name, subscriberId: subscriber,
                anonymousId: entry.identity.isAnonymous ? entry.identity.value : nil,
                timestampMicroseconds: event.timestampMicroseconds, receivedAtMicroseconds: entry.receivedAtMicroseconds,
                dataJSON: event.dataJSON))
        }
        outcome.duplicates = byKey.count - outcome.toPublish.count
        return outcome
    }

    private struct EventKey: Hashable {
        var tenant: UUID
        var id: String
    }

    /// $1..$9: tenant uuid[], event id, name, subscriber id (NULL for anonymous), anonymous id,
    /// data jsonb[], occurred µs int8[], received µs int8[], stream entry id.
    /// Rows: tenant, event id, resolved subscriber id, fresh (true: inserted now; false: stored
    /// earlier by the same stream entry).
    static let sql = """
        WITH input AS (
            SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[],
                                 $7::int8[], $8::int8[], $9::text[])
                AS t(tenant_id, event_id, name, subscriber_id, anonymous_id, data, occurred_us, received_us, entry_id)
        ),
        resolved AS (
            SELECT DISTINCT ON (i.tenant_id, i.event_id)
                   i.tenant_id, i.event_id, i.name,
                   COALESCE(i.subscriber_id, a.subscriber_id, i.anonymous_id) AS subscriber_id,
                   i.anonymous_id, i.data,
                   timestamptz 'epoch' + i.occurred_us * interval '1 microsecond' AS occurred_at,
                   timestamptz 'epoch' + i.received_us * interval '1 microsecond' AS received_at,
                   i.entry_id
            FROM input i
            LEFT JOIN subscriber_aliases a
                   ON i.anonymous_id IS NOT NULL AND a.tenant_id = i.tenant_id AND a.anonymous_id = i.anonymous_id
            ORDER BY i.tenant_id, i.event_id, i.entry_id
        ),
        claimed AS (
            INSERT INTO event_ids AS e (tenant_id, event_id, entry_id)
            SELECT tenant_id, event_id, entry_id FROM resolved
            ON CONFLICT (tenant_id, event_id) DO UPDATE SET entry_id = e.entry_id WHERE e.entry_id = EXCLUDED.entry_id
            RETURNING e.tenant_id, e.event_id, (e.xmax = 0) AS fresh
        ),
        fresh AS (
            SELECT r.* FROM resolved r
            JOIN claimed c ON c.tenant_id = r.tenant_id AND c.event_id = r.event_id
            WHERE c.fresh
        ),
        stored AS (
            INSERT INTO events (tenant_id, event_id, name, subscriber_id, anonymous_id, data, occurred_at, received_at)
            SELECT tenant_id, event_id, name, subscriber_id, anonymous_id, data, occurred_at, received_at FROM fresh
            RETURNING 1
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
            RETURNING 1
        )
        SELECT r.tenant_id::text, r.event_id, r.subscriber_id, c.fresh
        FROM resolved r JOIN claimed c ON c.tenant_id = r.tenant_id AND c.event_id = r.event_id
        """
}
