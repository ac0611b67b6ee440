import BuzzKitWire

/// At most `limit` pushes to a subscriber within a rolling `window`, of one category or (nil) of
/// every non-critical category; counted once per message however many devices it reached.
public struct FrequencyCap: Sendable, Hashable {
    public var category: String?
    public var limit: Int
    public var window: CapWindow

    public init(category: String? = nil, limit: Int, window: CapWindow) {
        self.category = category
        self.limit = limit
        self.window = window
    }

    /// `{"category"?, "limit", "window"}` as the settings show it.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["limit": .int(Int64(limit)), "window": .string(window.rawValue)]
        object["category"] = category.map(JSONValue.string) ?? .null
        return .object(object)
    }
}

/// The windows a cap may count over, as the settings write them.
public enum CapWindow: String, Sendable, Hashable, CaseIterable {
    case hour = "1h"
    case day = "1d"
    case week = "7d"

    public var seconds: Int {
        switch self {
        case .hour: 3600
        case .day: 86_400
        case .week: 604_800
        }
    }

    public init?(seconds: Int) {
        guard let window = Self.allCases.first(where: { $0.seconds == seconds }) else { return nil }
        self = window
    }
}
