import BuzzKitWire
import Foundation

/// The statements that resolve an audience in Postgres. Run them with any client that binds text
/// parameters (nil = NULL), e.g. `postgres.query(q.sql, q.parameters)` with BuzzKitPostgres.
///
/// Message fan-out streams an audience in keyset pages, never loading it whole:
/// ```swift
/// let expression = try AudienceExpression.parse(whereText)          // or a segment's stored text
/// let now = Date()                                                   // fix it once per send
/// var cursor: String? = nil
/// repeat {
///     let q = AudienceQuery.page(expression, tenantId: tenant, after: cursor, limit: 1000, now: now)
///     let ids = try await postgres.query(q.sql, q.parameters).map { try $0.decode(String.self, at: 0) }
///     // ... fan out to the devices of `ids` ...
///     cursor = ids.count == 1000 ? ids.last : nil
/// } while cursor != nil
/// ```
/// Keep the same `now` for every page of one send so `within:` windows do not slide between pages.
/// Run the statements in a transaction that starts with `settings` (the planner settings they
/// were measured with); the fan-out streams `all` through a server-side cursor instead of pages.
public enum AudienceQuery {
    /// `SELECT count(*)`: the number of the tenant's subscribers matching `expression` at `now`.
    public static func count(_ expression: AudienceExpression, tenantId: UUID, now: Date) -> AudienceSQL {
        var compiler = AudienceSQLCompiler(tenantId: tenantId, nowMicroseconds: EventTimestamp.microseconds(now))
        let condition = compiler.condition(expression)
        return AudienceSQL(
            sql: "SELECT count(*) FROM subscribers s WHERE s.tenant_id = $1::uuid AND \(condition)",
            parameters: compiler.parameters)
    }

    /// `SELECT s.id`: the next `limit` matching subscriber ids after `cursor` (exclusive; nil: from
    /// the start), in id order (bytes, `COLLATE "C"`). A page shorter than `limit` is the last one.
    public static func page(
        _ expression: AudienceExpression, tenantId: UUID, after cursor: String?, limit: Int,
        now: Date
    ) -> AudienceSQL {
        var (compiler, sql) = afterCursor(expression, tenantId: tenantId, cursor: cursor, now: now)
        sql += " ORDER BY s.id LIMIT \(compiler.bind(String(max(0, limit)), "int8"))"
        return AudienceSQL(sql: sql, parameters: compiler.parameters)
    }

    /// `SELECT s.id ... WHERE <condition> [AND s.id > cursor]`. With a cursor, event clauses also
    /// read only owners after it (`ownerFloor`: the cursor's placeholder, bound right after the
    /// condition's parameters), so page k does not read the events of pages 1 to k-1 again.
    private static func afterCursor(
        _ expression: AudienceExpression, tenantId: UUID, cursor: String?,
        now: Date
    ) -> (AudienceSQLCompiler, String) {
        let micros = EventTimestamp.microseconds(now)
        var compiler = AudienceSQLCompiler(tenantId: tenantId, nowMicroseconds: micros)
        if cursor != nil {
            var probe = AudienceSQLCompiler(tenantId: tenantId, nowMicroseconds: micros)
            _ = probe.condition(expression)
            compiler.ownerFloor = "$\(probe.parameters.count + 1)::text"
        }
        var sql = "SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND \(compiler.condition(expression))"
        if let cursor {
            let placeholder = compiler.bind(cursor, "text")
            precondition(placeholder == compiler.ownerFloor, "the cursor is bound where the event clauses expect it")
            sql += " AND s.id > \(placeholder)"
        }
        return (compiler, sql)
    }

    /// `SELECT s.id ... ORDER BY s.id` with no limit: the whole audience in one statement, for a
    /// server-side cursor (`DECLARE c NO SCROLL CURSOR FOR <sql>` then `FETCH 1000 FROM c` in one
    /// transaction). Prefer it to `page` for event shapes (`did`, `count`) on large audiences:
    /// `page` re-evaluates the event subquery on every page (bench: 110 pages of a 7-day `did` on
    /// 10M events took 21 s by pages, the whole set about 0.5 s in one statement).
    /// `after` (exclusive) resumes a stream after the last id handled, e.g. after a crash.
    public static func all(
        _ expression: AudienceExpression, tenantId: UUID, after cursor: String? = nil,
        now: Date
    ) -> AudienceSQL {
        let (compiler, sql) = afterCursor(expression, tenantId: tenantId, cursor: cursor, now: now)
        return AudienceSQL(sql: sql + " ORDER BY s.id", parameters: compiler.parameters)
    }

    /// Planner settings for the audience statements, local to the caller's transaction: run it
    /// right after `BEGIN` (`SELECT set_config(...)`, one round trip, no parameters).
    /// - `plan_cache_mode = force_custom_plan`: statements with parameters are prepared once per
    ///   connection; a generic plan (chosen after five runs) ignores the event name and window and
    ///   can be orders of magnitude slower.
    /// - `max_parallel_workers_per_gather = 0`: a parallel plan ran the whole sorted event
    ///   aggregate once per worker (bench: 3x the work) on a 2-core machine.
    /// - `jit = off`: compiling took about 100 ms of a count.
    /// - `work_mem = 64MB`: a `count()` that 0 satisfies (`NOT IN`) hashes the owners whose count
    ///   fails, up to a million ids; with the default 4MB hash aggregates spilled to disk.
    /// - `cursor_tuple_fraction = 1`: a cursor (`all`) is read to the end; plan for the total.
    /// - `enable_hashagg`, `enable_hashjoin`, `enable_nestloop` off: event clauses group owners
    ///   read in owner order (events_name_subscriber) and merge them with `subscribers`' primary
    ///   key. The planner cannot estimate a grouping over a union (it assumes 200 owners, 67 after
    ///   `HAVING`), so it picked a hash table of every owner and a primary-key probe per owner:
    ///   bench/audience.sh (1M subscribers, 10M events, a busy machine): `count >= 3` in 30 days
    ///   2.1-2.5 s → 0.82-0.98 s, `did` 7 days 0.55-0.73 s → 0.21-0.32 s, `in_topic` 0.26-0.32 s →
    ///   0.11-0.15 s, keyset pages of a count 2.3 s → 28-70 ms; an attribute equality is unchanged.
    ///   The planner still uses them where nothing else applies (e.g. `NOT IN` hashes its set).
    public static let settings = """
        SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('max_parallel_workers_per_gather', '0', true),
            set_config('jit', 'off', true), set_config('work_mem', '64MB', true),
            set_config('cursor_tuple_fraction', '1', true), set_config('enable_hashagg', 'off', true),
            set_config('enable_hashjoin', 'off', true), set_config('enable_nestloop', 'off', true)
        """

    /// The bare condition on `subscribers s` with its parameters numbered from `$2` (`$1` is the
    /// tenant id), for callers that embed it in a statement of their own (e.g. joining `devices`).
    public static func condition(_ expression: AudienceExpression, tenantId: UUID, now: Date) -> AudienceSQL {
        var compiler = AudienceSQLCompiler(tenantId: tenantId, nowMicroseconds: EventTimestamp.microseconds(now))
        let condition = compiler.condition(expression)
        return AudienceSQL(sql: condition, parameters: compiler.parameters)
    }
}
