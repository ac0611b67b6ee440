import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import Foundation

/// The `bk:ingest` batch handler: decode the entries, store them (`EventWriter`), publish what is
/// new on `bk:events`, and only then report success so the consumer acknowledges.
///
/// - An entry that cannot be decoded fails alone (and is dead-lettered after its deliveries).
/// - The transaction is retried `writeAttempts` times with backoff (deadlocks between consumers,
///   a Postgres restart); after that, and when publishing fails, every entry of the batch is left
///   pending for redelivery, which is safe: ids deduplicate and redelivered entries republish.
public struct IngestProcessor: Sendable {
    let writer: EventWriter
    let redis: RedisClient
    let configuration: IngestConfiguration
    let logger: Logger
    let metrics: IngestMetrics

    public init(
        postgres: PostgresClient, redis: RedisClient, configuration: IngestConfiguration,
        logger: Logger, metrics: MetricsRegistry
    ) {
        self.writer = EventWriter(postgres: postgres)
        self.redis = redis
        self.configuration = configuration
        self.logger = logger
        self.metrics = IngestMetrics(registry: metrics)
    }

    /// `StreamConsumer.BatchHandler`: returns the failed entries with their errors.
    public func handle(_ entries: [StreamEntry]) async -> [StreamEntryID: any Error] {
        var failures: [StreamEntryID: any Error] = [:]
        var decoded: [(id: StreamEntryID, entry: IngestEntry)] = []
        decoded.reserveCapacity(entries.count)
        for entry in entries {
            do {
                decoded.append((entry.id, try IngestEntry(entry: entry)))
            } catch {
                logger.error(
                    "ingest.entry.invalid", metadata: ["entry.id": entry.id.description, "error": error.description])
                failures[entry.id] = error
            }
        }
        guard !decoded.isEmpty else { return failures }
        do {
            let outcome = try await writeWithRetry(decoded)
            if !outcome.toPublish.isEmpty {
                try await redis.xaddBatch(
                    configuration.eventsStream.rawValue, entries: outcome.toPublish,
                    maxLength: configuration.eventsMaxLength)
            }
            metrics.stored.increment(by: outcome.inserted)
            metrics.duplicates.increment(by: outcome.duplicates)
            metrics.published.increment(by: outcome.published)
            metrics.batches.increment(by: decoded.count)
        } catch {
            metrics.failures.increment()
            logger.warning("ingest.batch.failed", metadata: ["entries": String(decoded.count), "error": "\(error)"])
            for (id, _) in decoded { failures[id] = error }
        }
        return failures
    }

    private func writeWithRetry(_ entries: [(id: StreamEntryID, entry: IngestEntry)]) async throws
        -> EventWriter.Outcome
    {
        var delay = Duration.milliseconds(50)
        var attempt = 1
        while true {
            do {
                return try await writer.write(entries)
            } catch {
                guard attempt < configuration.writeAttempts, !Task.isCancelled else { throw error }
                logger.debug("ingest.write.retry", metadata: ["attempt": String(attempt), "error": "\(error)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(2))
                attempt += 1
            }
        }
    }
}

struct IngestMetrics: Sendable {
    let stored: Counter
    let duplicates: Counter
    let published: Counter
    let batches: Counter
    let failures: Counter

    init(registry: MetricsRegistry) {
        stored = registry.counter("bk_ingest_events_stored_total", help: "Events newly stored in Postgres.")
        duplicates = registry.counter(
            "bk_ingest_events_duplicate_total", help: "Events dropped as duplicates of stored ones.")
        published = registry.counter("bk_ingest_events_published_total", help: "Events published on bk:events.")
        batches = registry.counter("bk_ingest_batches_total", help: "bk:ingest entries (event batches) processed.")
        failures = registry.counter(
            "bk_ingest_write_failures_total", help: "Batches of entries left pending after a failure.")
    }
}
