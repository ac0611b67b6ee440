import BuzzKitWire
import Foundation

/// The identified subscriber's notification preferences (the API's `SubscriberPreferences`, with
/// what each category means for them), as `GET /v1/subscribers/{id}/preferences`
/// answers them, with the changes this device made that have not reached the server yet applied.
public struct NotificationPreferences: Sendable, Hashable {
    /// One of the tenant's categories, as it applies to this subscriber.
    public struct Category: Sendable, Hashable {
        public var key: String
        public var name: String
        public var description: String?
        /// A critical category ignores preferences and caps: its pushes always arrive.
        public var critical: Bool
        /// What a subscriber who never chose gets.
        public var defaultEnabled: Bool
        /// Whether this category's pushes reach the subscriber now.
        public var enabled: Bool
        /// Whether the subscriber chose (else `defaultEnabled` applies).
        public var chosen: Bool

        public init(
            key: String, name: String, description: String? = nil, critical: Bool = false,
            defaultEnabled: Bool = true, enabled: Bool = true, chosen: Bool = false
        ) {
            self.key = key
            self.name = name
            self.description = description
            self.critical = critical
            self.defaultEnabled = defaultEnabled
            self.enabled = enabled
            self.chosen = chosen
        }
    }

    public var subscriberId: String
    /// false: the subscriber unsubscribed from everything (critical categories still arrive).
    public var all: Bool
    /// The subscriber's own choices; a category not named follows its `defaultEnabled`.
    public var categories: [String: Bool]
    /// Every category of the tenant (key order) with what it means for this subscriber.
    public var effective: [Category]
    /// When the server last changed them (nil: never).
    public var updatedAt: Date?
    /// Changes made on this device are queued, not yet on the server (they are applied in this value).
    public var hasPendingChanges: Bool
    /// This value is the device's last known one (`Preferences.cached()`), not an answer of the
    /// server to this call.
    public var isCached: Bool

    public init(
        subscriberId: String, all: Bool = true, categories: [String: Bool] = [:], effective: [Category] = [],
        updatedAt: Date? = nil, hasPendingChanges: Bool = false, isCached: Bool = false
    ) {
        self.subscriberId = subscriberId
        self.all = all
        self.categories = categories
        self.effective = effective
        self.updatedAt = updatedAt
        self.hasPendingChanges = hasPendingChanges
        self.isCached = isCached
    }

    /// Whether pushes of `category` reach the subscriber, as far as this value knows: the
    /// category's `enabled`, else (a category the answer did not list) `all` and the choice made.
    public func isEnabled(_ category: String) -> Bool {
        if let known = effective.first(where: { $0.key == category }) { return known.enabled }
        return all && (categories[category] ?? true)
    }

    /// The subscriber's choices alone (`{all, categories}`), as the API's wire type.
    public var choices: SubscriberPreferences { SubscriberPreferences(all: all, categories: categories) }

    /// This value with `change` applied as the server applies a PUT: what it names is replaced,
    /// the rest kept, and every non-critical category's `enabled` follows.
    func applying(_ change: PreferenceChange) -> NotificationPreferences {
        var next = self
        let choices = self.choices.applying(change)
        next.all = choices.all
        next.categories = choices.categories
        next.effective = effective.map { category in
            var category = category
            let choice = next.categories[category.key]
            category.chosen = choice != nil
            category.enabled = category.critical || (next.all && (choice ?? category.defaultEnabled))
            return category
        }
        return next
    }
}

// MARK: - The wire

extension NotificationPreferences {
    /// Reads the answer's `data`; nil when it is not a preferences object.
    init?(json: JSONValue) {
        guard let subscriber = json["subscriberId"]?.stringValue, let choices = SubscriberPreferences(json: json) else {
            return nil
        }
        let effective: [Category] = (json["effective"]?.arrayValue ?? []).compactMap { item in
            guard let key = item["key"]?.stringValue, let enabled = item["enabled"]?.boolValue else { return nil }
            return Category(
                key: key, name: item["name"]?.stringValue ?? key, description: item["description"]?.stringValue,
                critical: item["critical"]?.boolValue ?? false,
                defaultEnabled: item["defaultEnabled"]?.boolValue ?? true,
                enabled: enabled, chosen: item["chosen"]?.boolValue ?? false)
        }
        self.init(
            subscriberId: subscriber, all: choices.all, categories: choices.categories, effective: effective,
            updatedAt: json["updatedAt"]?.stringValue.flatMap(EventTimestamp.parse))
    }
}
