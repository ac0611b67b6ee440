import BuzzKitPostgres
import Foundation

/// What the policy decides for pushes that name no category, read without the decision
/// statement: a fan-out chunk of an uncategorized message (the usual send) asks only this,
/// within the statement that claims the chunk, instead of a statement of its own (7-8 µs of
/// Postgres per delivery in `bench/push_fanout.sh`).
///
/// It exists only when the tenant has no `defaultCategory` and no cap without a category. Then,
/// for a push naming no category, `decide` finds no governing category, so nothing critical, no
/// category switch and no cap of a category applies, and no cap counts it (a cap without a
/// category would): the one thing left to decide is the subscriber's global switch (`all:
/// false` → `unsubscribed`), and nothing is counted or written. With a default category or a
/// cap without a category the push goes to the decision statement as before.
public struct UncategorizedPolicy: Sendable, Hashable {
    /// The subscribers (of those asked about) whose global switch is off.
    public var unsubscribed: Set<String>

    public init(unsubscribed: Set<String>) {
        self.unsubscribed = unsubscribed
    }

    /// `decide`'s verdict for a push naming no category to `subscriber`.
    public func verdict(for subscriber: String) -> PolicyVerdict {
        PolicyVerdict(suppressed: unsubscribed.contains(subscriber) ? .unsubscribed : nil)
    }
}

extension Policy {
    /// An SQL expression (`text[]`, NULL when the tenant's settings leave more to decide for an
    /// uncategorized push: see `UncategorizedPolicy`) over `tenant` (a uuid expression) and
    /// `subscribers` (a text[] expression): the subscribers among them whose global switch is off.
    /// Read with `uncategorized(_:at:)`. Two index probes for the tenant's settings, one per
    /// subscriber into `subscriber_preferences`.
    public static func uncategorizedSQL(tenant: String, subscribers: String) -> String {
        """
        CASE WHEN EXISTS (SELECT 1 FROM policy_settings ps
                          WHERE ps.tenant_id = \(tenant) AND ps.default_category IS NOT NULL)
               OR EXISTS (SELECT 1 FROM frequency_caps fc WHERE fc.tenant_id = \(tenant) AND fc.category_key IS NULL)
             THEN NULL
             ELSE ARRAY(SELECT sp.subscriber_id::text FROM subscriber_preferences sp
                        WHERE sp.tenant_id = \(tenant) AND sp.subscriber_id = ANY((\(subscribers))::text[] COLLATE "C")
                          AND NOT sp.all_enabled)
        END
        """
    }

    /// `uncategorizedSQL`'s value in `row` at `column`.
    public static func uncategorized(_ row: PostgresRow, at column: Int) throws -> UncategorizedPolicy? {
        try row.decode([String]?.self, at: column).map { UncategorizedPolicy(unsubscribed: Set($0)) }
    }

    /// `uncategorizedSQL` on its own (a caller that reads it outside a statement of its own).
    public func uncategorized(tenant: UUID, subscribers: [String]) async throws -> UncategorizedPolicy? {
        try await postgres.withConnection {
            try await Self.uncategorized(tenant: tenant, subscribers: subscribers, on: $0)
        }
    }

    /// `uncategorizedSQL` on its own, on `connection` (a workflow claim reads it once for its
    /// runs' subscribers, in its transaction, instead of a decision statement per send step).
    public static func uncategorized(
        tenant: UUID, subscribers: [String], on connection: PostgresConnection
    ) async throws -> UncategorizedPolicy? {
        let rows = try await connection.query(
            "SELECT \(uncategorizedSQL(tenant: "$1::uuid", subscribers: "$2::text[]"))", [tenant, subscribers])
        return try rows.first.flatMap { try uncategorized($0, at: 0) }
    }
}
