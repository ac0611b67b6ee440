import BuzzKitContracts
import BuzzKitRedis

/// Puts validated event batches on `bk:ingest` (what `POST /v1/events` calls before it answers 202).
///
/// Durability: `enqueue` returns only after Redis answered the `XADD` with an id, so a batch
/// answered with 202 is in Redis and in its append-only file. How much of it survives a power cut
/// is Redis's `appendfsync` (our deploy scripts: `everysec`, at most about one second; `always` for
/// none); a clean restart (`SHUTDOWN`) loses nothing. The stream is never trimmed here: entries are
/// capped only after the ingest service stored them.
public struct IngestProducer: Sendable {
    public let redis: RedisClient
    public let stream: StreamName

    /// - Parameter stream: default `bk:ingest`; tests pass their own.
    public init(redis: RedisClient, stream: StreamName = .ingest) {
        self.redis = redis
        self.stream = stream
    }

    /// One `XADD`; returns the entry id once Redis accepted it.
    @discardableResult
    public func enqueue(_ entry: IngestEntry) async throws(RedisError) -> StreamEntryID {
        try await redis.xadd(stream.rawValue, fields: entry.fields)
    }

    /// Many entries, pipelined; ids in input order. On error, entries before the failing one may
    /// have been added: callers retry the whole set (the ingest service deduplicates by event id).
    @discardableResult
    public func enqueue(_ entries: [IngestEntry]) async throws(RedisError) -> [StreamEntryID] {
        try await redis.xaddBatch(stream.rawValue, entries: entries.map(\.fields))
    }
}
