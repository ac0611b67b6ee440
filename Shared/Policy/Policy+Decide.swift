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
    /// Decides every candidate and counts what goes out against the tenant's frequency caps: ONE
    /// statement for the whole list (a chunk of 100 devices, a claim's send), not one per device.
    /// In order, per candidate:
    ///
    /// 1. its category: the one it names when the tenant has it, else the default category;
    /// 2. a critical category goes out, uncounted;
    /// 3. `all: false` → `unsubscribed`; the category off (chosen, or by default) → `category_disabled`;
    /// 4. when a cap counts it (one of its category, or one without a category; a push no cap
    ///    counts touches no counter, so a tenant capping `marketing` pays nothing more for its
    ///    other pushes): it goes out if its message is already counted for the subscriber (a
    ///    resent chunk, a subscriber's device in another chunk), or if every cap counting it has
    ///    fewer than its limit within its window, and is then appended to the subscriber's counter
    ///    row; else `frequency_capped`.
    ///
    /// Exact under concurrency: the statement first takes the transaction-level advisory lock of
    /// each subscriber it may count for, in key order (`bk_cap_lock_key`), so deciders of one
    /// subscriber take turns and two never wait on each other in a circle; the row is then
    /// rewritten by an `UPDATE` whose condition reads the counts, which Postgres evaluates again on
    /// the newest row when a racer changed it after this statement's snapshot: two replicas racing
    /// for the last slot let exactly one through. A capped push writes nothing.
    ///
    /// A statement counts one candidate per subscriber (the first in the list); a subscriber's
    /// further candidates (a direct batch, a dry run's several sends) are decided by the next
    /// statements, in order, each seeing what the one before let through. A subscriber without a
    /// counter row yet has one inserted and is decided again: only the first capped push to a
    /// subscriber costs more than one statement. Statements run on their own (no transaction)
    /// unless `connection` is in one; a transaction that decides for several subscribers one
    /// after another must lock them all first (`lockCounters`).
    public static func decide(
        _ candidates: [PolicyCandidate], tenant: UUID, now: Date, on connection: PostgresConnection
    ) async throws -> [PolicyCandidate: PolicyVerdict] {
        var verdicts: [PolicyCandidate: PolicyVerdict] = [:]
        var pending = Self.distinct(candidates)
        var inserted = Set<String>()
        while !pending.isEmpty {
            let rows = try await connection.query(Self.decideSQL, Self.parameters(pending, tenant: tenant, now: now))
            var later = Set<PolicyCandidate>()
            var uncounted = Set<String>()
            for row in rows {
                let index = try row.decode(Int.self, at: 0) - 1
                guard pending.indices.contains(index) else { continue }
                let candidate = pending[index]
                var reason = try row.decode(String?.self, at: 3)
                if reason == Self.uncounted && !inserted.contains(candidate.subscriberId) {
                    uncounted.insert(candidate.subscriberId)
                    later.insert(candidate)
                    continue
                }
                if reason == Self.deferred {
                    later.insert(candidate)
                    continue
                }
                // Still no counter row after inserting one: the subscriber is gone (deleted
                // meanwhile), and nothing can count for it; the push is not held back.
                if reason == Self.uncounted { reason = nil }
                verdicts[candidate] = PolicyVerdict(
                    category: try row.decode(String?.self, at: 1), critical: try row.decode(Bool.self, at: 2),
                    suppressed: reason.flatMap(SuppressionReason.init(rawValue:)))
            }
            if !uncounted.isEmpty {
                // Their first capped push: a counter row each (only for subscribers that still
                // exist), under the same locks, then the same decision again.
                try await connection.execute(Self.insertCountersSQL, [tenant, uncounted.sorted()])
                inserted.formUnion(uncounted)
            }
            pending = pending.filter { later.contains($0) }
        }
        return verdicts
    }

    /// `decide` on a pooled connection, each statement on its own. `uncategorized`: as in
    /// `decide(_:tenant:now:on:uncategorized:)`.
    public func decide(
        _ candidates: [PolicyCandidate], tenant: UUID, now: Date = Date(), uncategorized: UncategorizedPolicy? = nil
    ) async throws -> [PolicyCandidate: PolicyVerdict] {
        guard !candidates.isEmpty else { return [:] }
        let (verdicts, asked) = Self.answered(candidates, by: uncategorized)
        guard !asked.isEmpty else { return verdicts }
        let decided = try await postgres.withConnection {
            try await Self.decide(asked, tenant: tenant, now: now, on: $0)
        }
        return verdicts.merging(decided) { _, statement in statement }
    }

    /// `decide` on `connection` (in the caller's transaction, if any). `uncategorized`: what the
    /// policy decides for the tenant's pushes naming no category, read already by the caller
    /// (a chunk's claim: `uncategorizedSQL`; a workflow claim: `uncategorized(tenant:subscribers:on:)`);
    /// those candidates are answered from it and only the others are asked, so a list of
    /// uncategorized pushes needs no statement.
    public static func decide(
        _ candidates: [PolicyCandidate], tenant: UUID, now: Date, on connection: PostgresConnection,
        uncategorized: UncategorizedPolicy?
    ) async throws -> [PolicyCandidate: PolicyVerdict] {
        let (verdicts, asked) = Self.answered(candidates, by: uncategorized)
        guard !asked.isEmpty else { return verdicts }
        let decided = try await Self.decide(asked, tenant: tenant, now: now, on: connection)
        return verdicts.merging(decided) { _, statement in statement }
    }

    /// The candidates `uncategorized` answers (those naming no category), and the rest, to ask.
    static func answered(_ candidates: [PolicyCandidate], by uncategorized: UncategorizedPolicy?) -> (
        [PolicyCandidate: PolicyVerdict], [PolicyCandidate]
    ) {
        guard let uncategorized else { return ([:], candidates) }
        var verdicts: [PolicyCandidate: PolicyVerdict] = [:]
        var asked: [PolicyCandidate] = []
        for candidate in candidates {
            if candidate.category == nil {
                verdicts[candidate] = uncategorized.verdict(for: candidate.subscriberId)
            } else {
                asked.append(candidate)
            }
        }
        return (verdicts, asked)
    }

    /// What `decide` would answer now, counting nothing (a workflow's dry run): `decide` itself,
    /// in a transaction that is rolled back, so the answers cannot drift from a real send's
    /// (a subscriber's later sends see the earlier ones let through, as they would).
    public func evaluate(_ candidates: [PolicyCandidate], tenant: UUID, now: Date = Date()) async throws
        -> [PolicyCandidate: PolicyVerdict]
    {
        guard !candidates.isEmpty else { return [:] }
        return try await postgres.withConnection { connection in
            try await connection.execute("BEGIN")
            let verdicts: [PolicyCandidate: PolicyVerdict]
            do {
                verdicts = try await Self.decide(candidates, tenant: tenant, now: now, on: connection)
            } catch {
                _ = try? await connection.execute("ROLLBACK")
                throw error
            }
            try await connection.execute("ROLLBACK")
            return verdicts
        }
    }

    // MARK: - The statements

    /// The reason a candidate gets when its subscriber has no counter row yet (never answered).
    static let uncounted = "uncounted"
    /// The reason a candidate gets when an earlier candidate of its subscriber is counted by this
    /// statement: the next one decides it (never answered).
    static let deferred = "deferred"

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

    /// `$1` tenant, `$2` subscribers (sorted): a counter row for each that exists, after its lock.
    static let insertCountersSQL = """
        WITH locks AS (
            SELECT count(pg_advisory_xact_lock(k.key)) AS taken
            FROM (SELECT DISTINCT bk_cap_lock_key($1::uuid, u.s) AS key FROM unnest($2::text[]) AS u(s) ORDER BY 1) k
        )
        INSERT INTO frequency_cap_counters (tenant_id, subscriber_id)
        SELECT $1::uuid, s.id FROM subscribers s, locks l
        WHERE s.tenant_id = $1::uuid AND s.id = ANY($2::text[]) AND l.taken >= 0
        ORDER BY s.id ON CONFLICT DO NOTHING
        """

    /// `$1` tenant, `$2`-`$4` the candidates (message, subscriber, category named), `$5` now.
    /// `decided`: the decision by preferences; `wanted`: the first capped candidate of each
    /// subscriber (with the smallest limit of the caps counting it: a row holding fewer pushes
    /// than that fits without counting them); `locks`: their advisory locks, in key order, taken before `counted` reads or
    /// writes a row (a join emits nothing before both its sides did); `counted`: the rows let
    /// through, rewritten (pushes older than the longest window dropped, this one appended at `$5`
    /// or just after the newest, so each row stays in time order). Answers (position from 1,
    /// governing category, critical, reason or NULL).
    static let decideSQL = """
        WITH pairs AS (
            SELECT u.m, u.s, u.c, u.n FROM unnest($2::uuid[], $3::text[], $4::text[]) WITH ORDINALITY AS u(m, s, c, n)
        ), settings AS (
            SELECT (SELECT default_category FROM policy_settings WHERE tenant_id = $1::uuid) AS default_category,
                   array_agg(f.category_key ORDER BY f.position) AS cap_categories,
                   $5::timestamptz - make_interval(secs => max(f.window_seconds)) AS horizon
            FROM frequency_caps f WHERE f.tenant_id = $1::uuid
        ), caps AS (
            SELECT f.category_key, f.max_count, $5::timestamptz - make_interval(secs => f.window_seconds) AS since
            FROM frequency_caps f WHERE f.tenant_id = $1::uuid
        ), governing AS (
            SELECT r.c, g.key AS category, coalesce(g.critical, false) AS critical,
                   coalesce(g.default_enabled, true) AS default_enabled,
                   (SELECT min(k.max_count) FROM caps k WHERE k.category_key IS NULL OR k.category_key = g.key)
                       AS least_limit
            FROM (SELECT DISTINCT c FROM pairs) r CROSS JOIN settings st
            LEFT JOIN LATERAL (
                SELECT k.key, k.critical, k.default_enabled FROM categories k
                WHERE k.tenant_id = $1::uuid AND k.key IN (r.c, st.default_category)
                ORDER BY (k.key = r.c) IS TRUE DESC LIMIT 1
            ) g ON true
        ), decided AS (
            SELECT p.m, p.s, p.n, g.category, g.critical, g.least_limit,
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
            SELECT DISTINCT ON (d.s) d.s, d.m, d.n, d.category, d.least_limit
            FROM decided d WHERE d.reason IS NULL AND d.capped
            ORDER BY d.s, d.n
        ), locks AS (
            SELECT count(pg_advisory_xact_lock(k.key)) AS taken
            FROM (SELECT DISTINCT bk_cap_lock_key($1::uuid, w.s) AS key FROM wanted w ORDER BY 1) k
        ), counted AS (
            UPDATE frequency_cap_counters f
            SET sent_at = CASE WHEN w.m = ANY (f.messages) THEN f.sent_at
                               ELSE f.sent_at[\(expired) + 1:]
                                    || greatest($5::timestamptz, f.sent_at[cardinality(f.sent_at)]) END,
                messages = CASE WHEN w.m = ANY (f.messages) THEN f.messages
                                ELSE f.messages[\(expired) + 1:] || w.m END,
                categories = CASE WHEN w.m = ANY (f.messages) THEN f.categories
                                  ELSE f.categories[\(expired) + 1:] || w.category END
            FROM wanted w, locks l, settings st
            WHERE f.tenant_id = $1::uuid AND f.subscriber_id = w.s AND l.taken >= 0
              AND (w.m = ANY (f.messages) OR cardinality(f.sent_at) < w.least_limit OR NOT EXISTS (
                  SELECT 1 FROM caps k
                  WHERE (k.category_key IS NULL OR k.category_key = w.category)
                    AND (SELECT count(*) FROM unnest(f.sent_at, f.categories) AS x(at, category)
                         WHERE x.at > k.since AND (k.category_key IS NULL OR x.category = k.category_key))
                        >= k.max_count))
            RETURNING f.subscriber_id
        )
        SELECT d.n, d.category, d.critical,
               coalesce(d.reason, CASE
                   WHEN NOT d.capped THEN NULL
                   WHEN w.n <> d.n THEN '\(deferred)'
                   WHEN c.subscriber_id IS NOT NULL THEN NULL
                   WHEN NOT EXISTS (SELECT 1 FROM frequency_cap_counters f
                                    WHERE f.tenant_id = $1::uuid AND f.subscriber_id = d.s) THEN '\(uncounted)'
                   ELSE 'frequency_capped' END)
        FROM decided d
        LEFT JOIN wanted w ON w.s = d.s
        LEFT JOIN counted c ON c.subscriber_id = d.s
        ORDER BY d.n
        """

    /// How many of a row's oldest pushes fell out of the longest window (`st.horizon`): none
    /// unless the oldest did (the common case costs one comparison).
    private static let expired = """
        CASE WHEN f.sent_at[1] > st.horizon THEN 0
             ELSE (SELECT count(*) FROM unnest(f.sent_at) AS a WHERE a <= st.horizon)::int END
        """
}
