import BuzzKitPostgres
import Foundation

extension Policy {
    /// Takes the frequency-cap locks of these subscribers (`bk_cap_lock_key`, transaction-level
    /// advisory locks: no row is written for them) for the rest of the caller's transaction, all
    /// at once in key order, for tenants that have caps; others are left alone. A transaction
    /// that then decides sends one at a time for several subscribers (a workflow claim, a group
    /// of events) holds every lock it will need before its first decision, so it never waits on
    /// one while holding another out of order: two claims, or a claim and apns-sender's chunk
    /// (whose statement takes its locks in key order before it reads or writes a counter row),
    /// cannot deadlock. `decide` takes them again inside the transaction at no cost.
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
            SELECT count(pg_advisory_xact_lock(k.key))
            FROM (
                SELECT DISTINCT bk_cap_lock_key(u.t, u.id) AS key
                FROM unnest($1::uuid[], $2::text[]) AS u(t, id)
                WHERE EXISTS (SELECT 1 FROM frequency_caps f WHERE f.tenant_id = u.t)
                ORDER BY 1
            ) k
            """, [tenants, ids])
    }
}
