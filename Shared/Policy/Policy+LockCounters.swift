import BuzzKitPostgres
import Foundation

extension Policy {
    /// Locks the frequency-cap counter rows of these subscribers (inserting a missing one) for the
    /// rest of the caller's transaction, all at once in (tenant, subscriber) order, for tenants
    /// that have caps; others are left alone. A transaction that then decides sends one at a time
    /// for several subscribers (a workflow claim, a group of events) holds every row it will
    /// need before its first decision, so it never waits on a row while holding another out of
    /// order: two claims, or a claim and apns-sender's chunk (which locks in subscriber order in
    /// one statement), cannot deadlock. `DO UPDATE ... WHERE false` locks a row it does not change.
    public static func lockCounters(_ subscribers: [(tenant: UUID, subscriber: String)], on tx: PostgresConnection)
        async throws
    {
        var seen = Set<String>()
        var tenants: [UUID] = []
        var ids: [String] = []
        for (tenant, subscriber) in subscribers where seen.insert("\(tenant)/\(subscriber)").inserted {
            tenants.append(tenant)
            ids.append(subscriber)
        }
        guard !ids.isEmpty else { return }
        try await tx.execute(
            """
            INSERT INTO frequency_cap_counters (tenant_id, subscriber_id)
            SELECT s.tenant_id, s.id
            FROM unnest($1::uuid[], $2::text[]) AS u(t, id)
            JOIN subscribers s ON s.tenant_id = u.t AND s.id = u.id
            WHERE EXISTS (SELECT 1 FROM frequency_caps f WHERE f.tenant_id = u.t)
            ORDER BY s.tenant_id, s.id
            ON CONFLICT (tenant_id, subscriber_id) DO UPDATE SET sends = frequency_cap_counters.sends WHERE false
            """, [tenants, ids])
    }
}
