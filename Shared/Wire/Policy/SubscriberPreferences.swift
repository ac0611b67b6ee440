/// A subscriber's notification preferences as the API and the SDK exchange them:
/// `{"all": true|false, "categories": {"<key>": true|false}}`.
///
/// `all: false` is the global unsubscribe. `categories` holds the subscriber's own choices; a
/// category they never chose follows its default. A change (`PUT`) names only what it changes and
/// keeps the rest, so both members are optional there.
public struct SubscriberPreferences: Sendable, Hashable {
    public var all: Bool
    public var categories: [String: Bool]

    public init(all: Bool = true, categories: [String: Bool] = [:]) {
        self.all = all
        self.categories = categories
    }

    /// `{"all", "categories"}`.
    public var jsonValue: JSONValue {
        ["all": .bool(all), "categories": .object(categories.mapValues(JSONValue.bool))]
    }

    /// Reads `{"all", "categories"}` (members it does not know are ignored); nil when it is not
    /// that shape.
    public init?(json: JSONValue?) {
        guard let object = json?.objectValue, let all = object["all"]?.boolValue else { return nil }
        var categories: [String: Bool] = [:]
        for (key, value) in object["categories"]?.objectValue ?? [:] {
            guard let enabled = value.boolValue else { return nil }
            categories[key] = enabled
        }
        self.init(all: all, categories: categories)
    }

    /// These preferences with `change` applied: what it names replaced, the rest kept.
    public func applying(_ change: PreferenceChange) -> SubscriberPreferences {
        var result = self
        if let all = change.all { result.all = all }
        result.categories.merge(change.categories) { _, new in new }
        return result
    }
}

/// A change of preferences (`PUT /v1/subscribers/{id}/preferences`): only what it names changes.
public struct PreferenceChange: Sendable, Hashable {
    public var all: Bool?
    public var categories: [String: Bool]

    public init(all: Bool? = nil, categories: [String: Bool] = [:]) {
        self.all = all
        self.categories = categories
    }

    public var isEmpty: Bool { all == nil && categories.isEmpty }

    /// Two changes in a row as one: the later one's values win.
    public func merged(with later: PreferenceChange) -> PreferenceChange {
        PreferenceChange(
            all: later.all ?? all, categories: categories.merging(later.categories) { _, new in new })
    }

    /// The request body: `{"all"?, "categories"?}`.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = [:]
        if let all { object["all"] = .bool(all) }
        if !categories.isEmpty { object["categories"] = .object(categories.mapValues(JSONValue.bool)) }
        return .object(object)
    }

    /// Reads what `jsonValue` writes; nil when it is not that shape.
    public init?(json: JSONValue?) {
        guard let object = json?.objectValue else { return nil }
        var all: Bool?
        if let value = object["all"] {
            guard let bool = value.boolValue else { return nil }
            all = bool
        }
        var categories: [String: Bool] = [:]
        for (key, value) in object["categories"]?.objectValue ?? [:] {
            guard let enabled = value.boolValue else { return nil }
            categories[key] = enabled
        }
        self.init(all: all, categories: categories)
    }
}
