import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// One push the policy is asked about: a message to a subscriber (however many devices), in the
/// category the message names (nil: none; the tenant's default category governs it then).
public struct PolicyCandidate: Sendable, Hashable {
    public var messageId: UUID
    public var subscriberId: String
    public var category: String?

    public init(messageId: UUID, subscriberId: String, category: String?) {
        self.messageId = messageId
        self.subscriberId = subscriberId
        self.category = category
    }
}

/// The policy's answer for one candidate.
public struct PolicyVerdict: Sendable, Hashable {
    /// The category that governed it (the one named when the tenant has it, else the default
    /// category; nil: none).
    public var category: String?
    /// A critical category: preferences and caps did not apply.
    public var critical: Bool
    /// nil: it goes out (and, when the tenant has caps, it was counted).
    public var suppressed: SuppressionReason?

    public init(category: String? = nil, critical: Bool = false, suppressed: SuppressionReason? = nil) {
        self.category = category
        self.critical = critical
        self.suppressed = suppressed
    }
}

extension Policy {
    /// Decides every candidate at once and counts what goes out against the tenant's frequency
    /// caps: ONE statement for the whole list (a chunk of 100 devices, a claim's sends), not one
    /// per device. In order, per candidate:
    ///
    /// 1. its category: the one it names when the tenant has it, else the default category;
    /// 2. a critical category goes out, uncounted;
    /// 3. `all: false` → `unsubscribed`; the category off (chosen, or by default) → `category_disabled`;
    /// 4. when a cap counts it (one of its category, or one without a category; a push no cap
    ///    counts touches no counter, so a tenant capping `marketing` pays nothing more for its
    ///    other pushes): the subscriber's counter row is locked (subscribers in order,
    ///    so replicas never wait on each other in a circle) and each of its candidates, in order,
    ///    is let through and appended if every cap counting it has a slot left, else
    ///    `frequency_capped`. A message already counted for the subscriber goes out again (a
    ///    resent chunk, a subscriber's device in another chunk). Two replicas racing for the last
    ///    slot: the second waits for the first's row and sees its append.
    ///
    /// A subscriber without a counter row yet has one inserted (a second statement) and is decided
    /// again (a third): only the first capped push to a subscriber costs more than one statement.
    /// Statements run on their own (no transaction) unless `connection` is in one.
    public static func decide(
        _ candidates: [PolicyCandidate], tenant: UUID, now: Date, on connection: PostgresConnection
    ) async throws -> [PolicyCandidate: PolicyVerdict] {
        var verdicts: [PolicyCandidate: PolicyVerdict] = [:]
        var pending = Self.distinct(candidates)
        for round in 0..<2 where !pending.isEmpty {
            let rows = try await connection.query(Self.decideSQL, Self.parameters(pending, tenant: tenant, now: now))
            var uncounted: [PolicyCandidate] = []
            for row in rows {
                let index = try row.decode(Int.self, at: 0) - 1
                guard pending.indices.contains(index) else { continue }
                let reason = try row.decode(String?.self, at: 3)
                if reason == Self.uncounted && round == 0 {
                    uncounted.append(pending[index])
                    continue
                }
                verdicts[pending[index]] = PolicyVerdict(
                    category: try row.decode(String?.self, at: 1), critical: try row.decode(Bool.self, at: 2),
                    suppressed: reason.flatMap(SuppressionReason.init(rawValue:)))
            }
            guard !uncounted.isEmpty else { break }
            // Their first capped push: a counter row each (only for subscribers that still exist),
            // in subscriber order, then the same decision again.
            try await connection.execute(
                """
                INSERT INTO frequency_cap_counters (tenant_id, subscriber_id)
                SELECT $1::uuid, s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id = ANY($2::text[])
                ORDER BY s.id ON CONFLICT DO NOTHING
                """, [tenant, Array(Set(uncounted.map(\.subscriberId))).sorted()])
            pending = uncounted
        }
        return verdicts
    }

    /// `decide` on a pooled connection, each statement on its own.
    public func decide(_ candidates: [PolicyCandidate], tenant: UUID, now: Date = Date()) async throws
        -> [PolicyCandidate: PolicyVerdict]
    {
        guard !candidates.isEmpty else { return [:] }
        return try await postgres.withConnection { try await Self.decide(candidates, tenant: tenant, now: now, on: $0) }
    }

    /// What `decide` would answer now, counting nothing (a workflow's dry run).
    public func evaluate(_ candidates: [PolicyCandidate], tenant: UUID, now: Date = Date()) async throws
        -> [PolicyCandidate: PolicyVerdict]
    {
        let pending = Self.distinct(candidates)
        guard !pending.isEmpty else { return [:] }
        let rows = try await postgres.query(Self.evaluateSQL, Self.parameters(pending, tenant: tenant, now: now))
        var verdicts: [PolicyCandidate: PolicyVerdict] = [:]
        for row in rows {
            let index = try row.decode(Int.self, at: 0) - 1
            guard pending.indices.contains(index) else { continue }
            verdicts[pending[index]] = PolicyVerdict(
                category: try row.decode(String?.self, at: 1), critical: try row.decode(Bool.self, at: 2),
                suppressed: try row.decode(String?.self, at: 3).flatMap(SuppressionReason.init(rawValue:)))
        }
        return verdicts
    }

    // MARK: - The statement

    /// The reason a candidate gets when its subscriber has no counter row yet (never answered).
    static let uncounted = "uncounted"

    static func distinct(_ candidates: [PolicyCandidate]) -> [PolicyCandidate] {
        var seen = Set<PolicyCandidate>()
        return candidates.filter { seen.insert($0).inserted }
    }

    static func parameters(_ candidates: [PolicyCandidate], tenant: UUID, now: Date) -> [any PostgresEncodable] {
        var messages = PostgresArrayText(capacity: 2 + candidates.count * 37)
        var subscribers = PostgresArrayText()
        var categories = PostgresArrayText()
        for candidate in candidates {
            messages.append(candidate.messageId)
            subscribers.append(candidate.subscriberId)
            categories.append(candidate.category)
        }
        return [tenant, messages.value, subscribers.value, categories.value, now]
    }

    /// `$1` tenant, `$2`-`$4` the candidates (message, subscriber, category named), `$5` now. Up to
    /// `decided`, the decision by preferences; then `counted` (decide) or a read of the counters
    /// (evaluate). Answers (position from 1, governing category, critical, reason or NULL).
    private static func sql(counting: Bool) -> String {
        let counted =
            counting
            ? """
            locked AS (
                SELECT f.subscriber_id FROM frequency_cap_counters f
                WHERE f.tenant_id = $1::uuid AND f.subscriber_id IN (SELECT s FROM wanted)
                ORDER BY f.subscriber_id FOR UPDATE
            ), counted AS (
                UPDATE frequency_cap_counters f
                SET sends = bk_cap_admit(f.sends, w.candidates, st.cap_categories, st.cap_limits, st.cap_windows,
                                         $5::timestamptz, st.keep)
                FROM wanted w, settings st, locked l
                WHERE f.tenant_id = $1::uuid AND f.subscriber_id = w.s AND l.subscriber_id = w.s
                RETURNING f.subscriber_id, f.sends
            )
            """
            : """
            counted AS (
                SELECT w.s AS subscriber_id,
                       bk_cap_admit(coalesce(f.sends, '{}'), w.candidates, st.cap_categories, st.cap_limits,
                                    st.cap_windows, $5::timestamptz, st.keep) AS sends
                FROM wanted w CROSS JOIN settings st
                LEFT JOIN frequency_cap_counters f ON f.tenant_id = $1::uuid AND f.subscriber_id = w.s
            )
            """
        return """
            WITH pairs AS (
                SELECT u.m, u.s, u.c, u.n FROM unnest($2::uuid[], $3::text[], $4::text[]) WITH ORDINALITY AS u(m, s, c, n)
            ), settings AS (
                SELECT (SELECT default_category FROM policy_settings WHERE tenant_id = $1::uuid) AS default_category,
                       array_agg(f.category_key ORDER BY f.position) AS cap_categories,
                       array_agg(f.max_count ORDER BY f.position) AS cap_limits,
                       array_agg(f.window_seconds ORDER BY f.position) AS cap_windows,
                       max(f.window_seconds) AS keep
                FROM frequency_caps f WHERE f.tenant_id = $1::uuid
            ), governing AS (
                SELECT r.c, g.key AS category, coalesce(g.critical, false) AS critical,
                       coalesce(g.default_enabled, true) AS default_enabled
                FROM (SELECT DISTINCT c FROM pairs) r CROSS JOIN settings st
                LEFT JOIN LATERAL (
                    SELECT k.key, k.critical, k.default_enabled FROM categories k
                    WHERE k.tenant_id = $1::uuid AND k.key IN (r.c, st.default_category)
                    ORDER BY (k.key = r.c) IS TRUE DESC LIMIT 1
                ) g ON true
            ), decided AS (
                SELECT p.m, p.s, p.n, g.category, g.critical,
                       CASE WHEN g.critical THEN NULL
                            WHEN NOT coalesce(sp.all_enabled, true) THEN 'unsubscribed'
                            WHEN NOT coalesce(cp.enabled, g.default_enabled) THEN 'category_disabled'
                       END AS reason,
                       NOT g.critical AND EXISTS (
                           SELECT 1 FROM unnest(st.cap_categories) k WHERE k IS NULL OR k = g.category
                       ) AS capped
                FROM pairs p JOIN governing g ON g.c IS NOT DISTINCT FROM p.c CROSS JOIN settings st
                LEFT JOIN subscriber_preferences sp ON sp.tenant_id = $1::uuid AND sp.subscriber_id = p.s
                LEFT JOIN subscriber_category_preferences cp
                       ON cp.tenant_id = $1::uuid AND cp.subscriber_id = p.s AND cp.category_key = g.category
            ), wanted AS (
                SELECT d.s, array_agg(ROW($5::timestamptz, d.category, d.m)::bk_cap_send ORDER BY d.n) AS candidates
                FROM decided d
                WHERE d.reason IS NULL AND d.capped
                GROUP BY d.s
            ), \(counted)
            SELECT d.n, d.category, d.critical,
                   coalesce(d.reason, CASE
                       WHEN NOT d.capped THEN NULL
                       WHEN c.subscriber_id IS NULL THEN '\(uncounted)'
                       WHEN EXISTS (SELECT 1 FROM unnest(c.sends) x WHERE x.message = d.m) THEN NULL
                       ELSE 'frequency_capped' END)
            FROM decided d
            LEFT JOIN counted c ON c.subscriber_id = d.s
            ORDER BY d.n
            """
    }

    static let decideSQL = sql(counting: true)
    static let evaluateSQL = sql(counting: false)
}
