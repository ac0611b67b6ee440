import BuzzKitWire

/// Who a message goes to: what the intake stores in `messages.target` and the fan-out in
/// apns-sender reads back.
public enum MessageTarget: Sendable, Hashable {
    /// Every active device of these subscribers (1 to 1000 ids).
    case subscribers([String])
    /// Every active device of every subscriber of this topic.
    case topic(String)
    /// Every active device of every subscriber matching an audience expression: given inline
    /// (`where`), or a saved segment's expression recorded at send time (`segment` names it).
    case expression(String, segment: String?)

    /// `{"to": [...]}`, `{"topic": "key"}` or `{"where": "...", "segment"?: "key"}` (the
    /// `messages.target` column: a message records the expression it was sent to).
    public var jsonValue: JSONValue {
        switch self {
        case .subscribers(let ids): ["to": .array(ids.map(JSONValue.string))]
        case .topic(let key): ["topic": .string(key)]
        case .expression(let text, let segment):
            segment.map { ["where": .string(text), "segment": .string($0)] } ?? ["where": .string(text)]
        }
    }

    /// The most subscribers a message may name to travel as a direct message (see `isDirect`).
    public static let maxDirectSubscribers = 100

    /// A message to a short `to` list (at most `maxDirectSubscribers`): a one-subscriber
    /// transactional send, a workflow step, a fallback. Such messages go on the direct stream
    /// (`StreamName.direct`) and are claimed, sent and recorded many per statement; audiences
    /// (topics, expressions, long lists) are fanned out page by page from `bk:messages`.
    public var isDirect: Bool {
        if case .subscribers(let ids) = self { return ids.count <= Self.maxDirectSubscribers }
        return false
    }

    /// Reads the `messages.target` column back.
    public init?(json: JSONValue) {
        if let key = json["topic"]?.stringValue {
            self = .topic(key)
            return
        }
        if let ids = json["to"]?.arrayValue {
            self = .subscribers(ids.compactMap(\.stringValue))
            return
        }
        if let text = json["where"]?.stringValue {
            self = .expression(text, segment: json["segment"]?.stringValue)
            return
        }
        return nil
    }
}
