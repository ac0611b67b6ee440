/// The Redis streams between services, as typed constants, so producer and consumer name the same key.
///
/// | stream | producer | consumer | entry |
/// |---|---|---|---|
/// | `bk:ingest` | gateway (`POST /v1/events`, via `IngestProducer`) | ingest | `IngestEntry` (one event batch) |
/// | `bk:events` | ingest (the newly stored events of each batch) | workflow | `PublishedEventBatch` (one identity's events) |
/// | `bk:messages` | gateway, workflow | apns-sender | (issue 4) |
/// | `bk:deliveries` | apns-sender, liveactivity | apns-sender | (issue 4) |
/// | `bk:la` | gateway | liveactivity | (Live Activities issue) |
public struct StreamName: Sendable, Hashable, RawRepresentable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    public static let ingest: StreamName = "bk:ingest"
    public static let events: StreamName = "bk:events"
    public static let messages: StreamName = "bk:messages"
    public static let deliveries: StreamName = "bk:deliveries"
    public static let liveActivities: StreamName = "bk:la"
}

/// The consumer groups reading the event streams.
public enum ConsumerGroup {
    /// The ingest service's group on `bk:ingest`.
    public static let ingest = "ingest"
    /// The workflow service's group on `bk:events`.
    public static let workflow = "workflow"
}
