/// The Redis streams between services, as typed constants, so producer and consumer name the same key.
///
/// | stream | producer | consumer | entry |
/// |---|---|---|---|
/// | `bk:ingest` | gateway (`POST /v1/events`, via `IngestProducer`) | ingest | `IngestEntry` (one event batch) |
/// | `bk:events` | ingest (the newly stored events of each batch) | workflow | `PublishedEventBatch` (one identity's events) |
/// | `bk:messages` | gateway, workflow (audiences: topics, expressions, long `to` lists) | apns-sender | `MessageEntry` |
/// | `bk:messages:direct` | gateway, workflow (`MessageTarget.isDirect`: a short `to` list) | apns-sender | `MessageEntry` |
/// | `bk:deliveries` | apns-sender | apns-sender | `DeliveryChunk` |
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

    /// The sibling of a messages stream that carries its direct messages (`<name>:direct`, so
    /// `bk:messages:direct`; a test's own messages stream gets its own sibling).
    public var direct: StreamName { StreamName("\(rawValue):direct") }

    /// Where a message to `target` goes: this stream's direct sibling for a short `to` list,
    /// this stream (fanned out page by page) for an audience.
    public func forMessage(to target: MessageTarget) -> StreamName { target.isDirect ? direct : self }
}

/// The consumer groups reading the event streams.
public enum ConsumerGroup {
    /// The ingest service's group on `bk:ingest`.
    public static let ingest = "ingest"
    /// The workflow service's group on `bk:events`.
    public static let workflow = "workflow"
}
