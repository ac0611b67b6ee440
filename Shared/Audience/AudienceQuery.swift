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
        return AudienceSQL(sql: "SELECT count(*) FROM subscribers s WHERE s.tenant_id = $1::uuid AND \(condition)",
                           parameters: compiler.parameters)
    }

    /// `SELECT s.id`: the next `limit` matching subscriber ids after `cursor` (exclusive; nil: from
    /// the start), in id order (bytes, `COLLATE "C"`). A page shorter than `limit` is the last one.
    public static func page(_ expression: AudienceExpression, tenantId: UUID, after cursor: String?, limit: Int,
                            now: Date) -> AudienceSQL {
        var compiler = AudienceSQLCompiler(tenantId: tenantId, nowMicroseconds: EventTimestamp.microseconds(now))
        var sql = "SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND \(compiler.condition(expression))"
        if let cursor { sql += " AND s.id > \(compiler.bind(cursor, "text"))" }
        sql += " ORDER BY s.id LIMIT \(compiler.bind(String(max(0, limit)), "int8"))"
        return AudienceSQL(sql: sql, parameters: compiler.parameters)
    }

    /// `SELECT s.id ... ORDER BY s.id` with no limit: the whole audience in one statement, for a
    /// server-side cursor (`DECLARE c NO SCROLL CURSOR FOR <sql>` then `FETCH 1000 FROM c` in one
    /// transaction). Prefer it to `page` for event shapes (`did`, `count`) on large audiences:
    /// `page` re-evaluates the event subquery on every page (bench: 110 pages of a 7-day `did` on
    /// 10M events took 21 s by pages, the whole set about 0.5 s in one statement).
    /// `after` (exclusive) resumes a stream after the last id handled, e.g. after a crash.
    public static func all(_ expression: AudienceExpression, tenantId: UUID, after cursor: String? = nil,
                           now: Date) -> AudienceSQL {
        var compiler = AudienceSQLCompiler(tenantId: tenantId, nowMicroseconds: EventTimestamp.microseconds(now))
        var sql = "SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND \(compiler.condition(expression))"
        if let cursor { sql += " AND s.id > \(compiler.bind(cursor, "text"))" }
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
    /// - `work_mem = 64MB`: `count()` hashes up to a million owner ids; with the default 4MB the
    ///   aggregate spilled to disk (21 batches).
    /// - `cursor_tuple_fraction = 1`: a cursor (`all`) is read to the end; plan for the total.
    public static let settings = """
        SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('max_parallel_workers_per_gather', '0', true),
            set_config('jit', 'off', true), set_config('work_mem', '64MB', true),
            set_config('cursor_tuple_fraction', '1', true)
        """

    /// The bare condition on `subscribers s` with its parameters numbered from `$2` (`$1` is the
    /// tenant id), for callers that embed it in a statement of their own (e.g. joining `devices`).
    public static func condition(_ expression: AudienceExpression, tenantId: UUID, now: Date) -> AudienceSQL {
        var compiler = AudienceSQLCompiler(tenantId: tenantId, nowMicroseconds: EventTimestamp.microseconds(now))
        let condition = compiler.condition(expression)
        return AudienceSQL(sql: condition, parameters: compiler.parameters)
    }
}
