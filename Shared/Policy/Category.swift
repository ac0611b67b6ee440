import BuzzKitWire
import Foundation

/// A kind of notification a tenant sends (`PUT /v1/categories/{key}`): subscribers turn it on or
/// off, frequency caps may count it, and a message or a workflow send names it in `category`
/// (which is also the notification's `aps.category`).
public struct Category: Sendable, Hashable {
    public var key: String
    public var name: String
    public var description: String?
    /// What a subscriber who never chose gets.
    public var defaultEnabled: Bool
    /// Ignores preferences and caps (security alerts, purchase receipts).
    public var critical: Bool
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        key: String, name: String, description: String? = nil, defaultEnabled: Bool = true, critical: Bool = false,
        createdAt: Date = Date(), updatedAt: Date = Date()
    ) {
        self.key = key
        self.name = name
        self.description = description
        self.defaultEnabled = defaultEnabled
        self.critical = critical
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The fields a `PUT` sets.
    public struct Definition: Sendable, Hashable {
        public var name: String
        public var description: String?
        public var defaultEnabled: Bool
        public var critical: Bool

        public init(name: String, description: String? = nil, defaultEnabled: Bool = true, critical: Bool = false) {
            self.name = name
            self.description = description
            self.defaultEnabled = defaultEnabled
            self.critical = critical
        }
    }
}
