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
    public static func all(_ expression: AudienceExpression, tenantId: UUID, now: Date) -> AudienceSQL {
        var compiler = AudienceSQLCompiler(tenantId: tenantId, nowMicroseconds: EventTimestamp.microseconds(now))
        let condition = compiler.condition(expression)
        return AudienceSQL(sql: "SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND \(condition) ORDER BY s.id",
                           parameters: compiler.parameters)
    }

    /// The bare condition on `subscribers s` with its parameters numbered from `$2` (`$1` is the
    /// tenant id), for callers that embed it in a statement of their own (e.g. joining `devices`).
    public static func condition(_ expression: AudienceExpression, tenantId: UUID, now: Date) -> AudienceSQL {
        var compiler = AudienceSQLCompiler(tenantId: tenantId, nowMicroseconds: EventTimestamp.microseconds(now))
        let condition = compiler.condition(expression)
        return AudienceSQL(sql: condition, parameters: compiler.parameters)
    }
}
