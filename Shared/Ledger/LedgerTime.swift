import BuzzKitWire
import Foundation

/// How the ledger's statements name a message's week (migration 0027; docs/data-lifecycle.md,
/// "Retention"). `messages`, `deliveries` and `delivery_payloads` are partitioned by
/// `message_time`: a message's is the time in its id when the id is time-ordered (UUID version
/// 7), else the time its row was written; a delivery and a stored request carry their message's.
/// Every fragment is SQL over the given expressions, computed by the database (never a time that
/// went through Swift and back, which could differ in its last digit). Reads by a message id
/// outside this module (the gateway's, the sender's) name its week with `prune(_:id:)`.
public enum LedgerTime {
    /// The time in a version 7 UUID, NULL for another id: `bk_uuid7_time(id)` written out in the
    /// statement. The planner inlines a SQL function by parsing its body again every time it plans
    /// a statement that calls it (the record statement is planned for every chunk), so the hot
    /// statements carry the expression itself; `LedgerRetentionTests` holds the two equal.
    public static func uuid7Time(_ id: String) -> String {
        "(CASE WHEN substr((\(id))::text, 15, 1) = '7' THEN to_timestamp(('x' || substr((\(id))::text, 1, 8)"
            + " || substr((\(id))::text, 10, 4))::bit(48)::bigint / 1000.0) END)"
    }

    /// The `message_time` of a new message row with id `id`.
    static func newMessage(_ id: String) -> String {
        "coalesce(\(uuid7Time(id)), now())"
    }

    /// The `message_time` of a row under message `id` (a delivery, a stored request): the time in
    /// the id, else the message row's (`bk_message_time`: a lookup in every week, for the few
    /// messages whose id has no time, behind a function so that planning the statement does not
    /// expand `messages` into its weeks), else now (a message deleted with its tenant). About 3 us
    /// a call (text work on the id): a statement writing many rows computes it once per message
    /// (`messageTimes`).
    static func ofMessage(_ id: String) -> String {
        "coalesce(\(uuid7Time(id)), bk_message_time(\(id)), now())"
    }

    /// A condition that confines `column` (a `message_time`) to the time in message `id`, or to
    /// any time when the id has none. A range over values known when the statement starts, so it
    /// leaves one partition in a custom plan and in a generic one (pruned as it starts); an OR
    /// with a test of the id would prune in neither.
    public static func prune(_ column: String, id: String) -> String {
        "\(column) BETWEEN coalesce(\(uuid7Time(id)), '-infinity'::timestamptz)"
            + " AND coalesce(\(uuid7Time(id)), 'infinity'::timestamptz)"
    }

    /// `prune` for several message ids: `column` between the parameters `lower` and `upper`
    /// (`Range(of:)`, computed in Swift: a SQL function over an array costs a call of its own per
    /// statement), NULL standing for no bound.
    static func prune(_ column: String, lower: String, upper: String) -> String {
        "\(column) BETWEEN coalesce(\(lower)::timestamptz, '-infinity'::timestamptz)"
            + " AND coalesce(\(upper)::timestamptz, 'infinity'::timestamptz)"
    }

    /// The times messages of `ids` can be filed at: from a second before the earliest time in
    /// them to a second after the latest (a batch's ids are made together: one week), or no
    /// bounds (nil) when one has no time.
    struct Range: Sendable {
        var lower: Date?
        var upper: Date?

        init<S: Sequence<UUID>>(of ids: S) {
            var lowest: Date?
            var highest: Date?
            for id in ids {
                guard let time = id.timeOrderedDate else { return }
                lowest = min(lowest ?? time, time)
                highest = max(highest ?? time, time)
            }
            lower = lowest?.addingTimeInterval(-1)
            upper = highest?.addingTimeInterval(1)
        }
    }

    /// A CTE body listing `id` and `message_time` of each message of `ids` (a `uuid[]`
    /// expression), for a statement that writes many rows under few messages to join.
    static func messageTimes(_ ids: String) -> String {
        "SELECT m.id, \(ofMessage("m.id")) AS message_time FROM unnest(\(ids)) AS m(id)"
    }
}
