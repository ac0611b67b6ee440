/// How the ledger's statements name a message's week (migration 0027; docs/data-lifecycle.md,
/// "Retention"). `messages`, `deliveries` and `delivery_payloads` are partitioned by
/// `message_time`: a message's is the time in its id when the id is time-ordered (UUID version
/// 7), else the time its row was written; a delivery and a stored request carry their message's.
/// Every fragment is SQL over the given expressions, computed by the database (never a time that
/// went through Swift and back, which could differ in its last digit).
enum LedgerTime {
    /// The `message_time` of a new message row with id `id`.
    static func newMessage(_ id: String) -> String {
        "coalesce(bk_uuid7_time(\(id)), now())"
    }

    /// The `message_time` of a row under message `id` (a delivery, a stored request): the time in
    /// the id, else the message row's (a lookup in every week, for the few messages whose id has
    /// no time), else now (a message deleted with its tenant).
    static func ofMessage(_ id: String) -> String {
        "coalesce(bk_uuid7_time(\(id)), (SELECT x.message_time FROM messages x WHERE x.id = \(id) LIMIT 1), now())"
    }

    /// A condition that confines `column` (a `message_time`) to the week of message `id` when the
    /// id has a time; true otherwise. With the id known at planning it leaves one partition.
    static func prune(_ column: String, id: String) -> String {
        "(bk_uuid7_time(\(id)) IS NULL OR \(column) = bk_uuid7_time(\(id)))"
    }

    /// `prune` for an array of message ids.
    static func prune(_ column: String, ids: String) -> String {
        "(bk_uuid7_times(\(ids)) IS NULL OR \(column) = ANY(bk_uuid7_times(\(ids))))"
    }
}
