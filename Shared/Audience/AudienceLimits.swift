/// Bounds that keep one expression from becoming an expensive query. A violation is an
/// `AudienceError` with code `limit_exceeded` and the position where the limit was crossed.
public struct AudienceLimits: Sendable, Hashable {
    /// Longest expression text, in characters. Default 4,096.
    public var maxLength: Int
    /// Deepest nesting of parentheses, `not` and `where:` clauses. Default 16.
    public var maxDepth: Int
    /// Most `did(...)` and `count(...)` clauses in one expression (each one reads the events table). Default 5.
    public var maxEventClauses: Int
    /// Most conditions (leaves) in one expression. Default 64.
    public var maxConditions: Int
    /// Most values in one `in [...]` list. Default 100.
    public var maxListItems: Int
    /// Longest `within:` window, in days. Default 400 (events are kept 395 days by default).
    public var maxWithinDays: Int

    public init(
        maxLength: Int = 4096, maxDepth: Int = 16, maxEventClauses: Int = 5, maxConditions: Int = 64,
        maxListItems: Int = 100, maxWithinDays: Int = 400
    ) {
        self.maxLength = maxLength
        self.maxDepth = maxDepth
        self.maxEventClauses = maxEventClauses
        self.maxConditions = maxConditions
        self.maxListItems = maxListItems
        self.maxWithinDays = maxWithinDays
    }

    public static let `default` = AudienceLimits()
}
