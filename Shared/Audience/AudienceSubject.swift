import BuzzKitWire

/// Everything the in-memory evaluator needs to know about one subscriber.
public struct AudienceSubject: Sendable, Hashable {
    /// The subscriber's attributes (a JSON object).
    public var attributes: JSONValue
    public var timezone: String?
    public var locale: String?
    /// Microseconds since 1970.
    public var createdAtMicroseconds: Int64
    /// Keys of the topics the subscriber is subscribed to.
    public var topics: Set<String>
    public var devices: [AudienceDevice]
    /// The subscriber's events: those stored under its id and under every anonymous id aliased to it.
    public var events: [AudienceEvent]

    public init(
        attributes: JSONValue = [:], timezone: String? = nil, locale: String? = nil, createdAtMicroseconds: Int64 = 0,
        topics: Set<String> = [], devices: [AudienceDevice] = [], events: [AudienceEvent] = []
    ) {
        self.attributes = attributes
        self.timezone = timezone
        self.locale = locale
        self.createdAtMicroseconds = createdAtMicroseconds
        self.topics = topics
        self.devices = devices
        self.events = events
    }
}

/// A device as `has_device` sees it.
public struct AudienceDevice: Sendable, Hashable {
    /// "production" or "sandbox".
    public var environment: String
    /// Only active devices count.
    public var active: Bool

    public init(environment: String, active: Bool = true) {
        self.environment = environment
        self.active = active
    }
}

/// An event as `did` and `count` see it.
public struct AudienceEvent: Sendable, Hashable {
    public var name: String
    public var data: JSONValue
    public var occurredAtMicroseconds: Int64

    public init(name: String, data: JSONValue = [:], occurredAtMicroseconds: Int64) {
        self.name = name
        self.data = data
        self.occurredAtMicroseconds = occurredAtMicroseconds
    }
}
