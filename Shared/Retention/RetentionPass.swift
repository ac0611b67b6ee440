import Foundation

/// What one retention pass did and found, for every table: its owner's `Kept` says what keeps a
/// week past its time (the workflow runs', the ledger's; `Never` where nothing does).
public struct RetentionPass<Kept: Sendable & Hashable>: Sendable, Hashable {
    /// False: another session held the lock; nothing was done.
    public var ran: Bool
    /// Partitions created (of every table the pass keeps).
    public var created: [String] = []
    /// Partitions dropped (of every table the pass keeps).
    public var dropped: [String] = []
    /// Weeks past their time kept for what they still hold.
    public var kept: [Kept] = []
    /// Partitions of the table after the pass.
    public var partitions: Int = 0
    /// Partitions wholly after `now` (the weeks writes can still reach without a new one).
    public var partitionsAhead: Int = 0
    /// The oldest data there can be: the lower bound of the oldest partition kept (for a legacy
    /// partition, its oldest row); nil when there is none.
    public var oldest: Date?

    public init(ran: Bool = false) {
        self.ran = ran
    }
}
