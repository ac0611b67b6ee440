import BuzzKitContracts
import BuzzKitCore
import BuzzKitRedis
import BuzzKitWire
import Foundation

/// `POST /v1/events` minus HTTP: validate a batch and queue it durably on `bk:ingest`.
///
/// ```swift
/// let intake = EventIntake(producer: IngestProducer(redis: runtime.redis), logger: runtime.logger)
/// let accepted = try await intake.accept(tenantId: tenant, body: request.body)  // throws APIError
/// return Response.json(status: 202, accepted.jsonValue)     // {"batchId": "...", "accepted": 100}
/// ```
/// Errors (`APIError`, with the envelope's `details`):
/// - `invalid_json` 400: the body is not JSON.
/// - `batch_too_large` 422: more than 100 events; `details` `{"limit": 100, "count": n}`.
/// - `validation_failed` 422: anything else wrong, all problems at once; `details` is an array of
///   `{"index": n|null, "field": "...", "message": "..."}` (index null for batch-level problems).
/// - `ingest_unavailable` 503: Redis did not take the batch; nothing was accepted, retry it.
public struct EventIntake: Sendable {
    /// What the 202 answers.
    public struct Accepted: Sendable, Hashable {
        public var batchId: String
        /// Events accepted (duplicates of earlier batches are dropped later, by the ingest service).
        public var accepted: Int
        public var entryID: StreamEntryID

        /// `{"batchId": "...", "accepted": n}`.
        public var jsonValue: JSONValue { ["batchId": .string(batchId), "accepted": .int(Int64(accepted))] }
    }

    public let producer: IngestProducer
    let logger: Logger
    let clock: @Sendable () -> Date

    /// - Parameter clock: the receive time (and the reference for "too far in the future"); tests inject one.
    public init(producer: IngestProducer, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.producer = producer
        self.logger = logger
        self.clock = clock
    }

    /// Parses, validates and queues `body` (raw request bytes).
    public func accept(tenantId: UUID, body: some Collection<UInt8>) async throws(APIError) -> Accepted {
        try await accept(tenantId: tenantId, json: Self.parse(body))
    }

    /// Validates and queues an already parsed body.
    public func accept(tenantId: UUID, json: JSONValue) async throws(APIError) -> Accepted {
        let now = clock()
        return try await enqueue(Self.validate(json, now: now), tenantId: tenantId, receivedAt: now)
    }

    /// The request body as JSON, or `400 invalid_json`.
    public static func parse(_ body: some Collection<UInt8>) throws(APIError) -> JSONValue {
        do {
            return try JSONValue.parse(body)
        } catch {
            throw APIError.invalidJSON(error.description)
        }
    }

    /// The receive time this intake stamps on batches (injectable in tests).
    public var now: Date { clock() }

    /// Queues a batch already validated (with `validate`) at `receivedAt`, e.g. by a caller that
    /// had to check the batch's identity itself before queueing it.
    public func enqueue(_ batch: EventBatch, tenantId: UUID, receivedAt now: Date) async throws(APIError) -> Accepted {
        let batchId = UUID().lowercasedText
        let entry = IngestEntry(tenantId: tenantId, batchId: batchId, batch: batch, receivedAt: now)
        do {
            let id = try await producer.enqueue(entry)
            return Accepted(batchId: batchId, accepted: batch.events.count, entryID: id)
        } catch {
            logger.warning(
                "events.enqueue.failed", metadata: ["tenant": tenantId.uuidString, "error": error.description])
            throw APIError(.ingestUnavailable, "the events could not be queued; nothing was accepted, retry the batch")
        }
    }

    /// The validation half alone (no I/O): the batch, or the `APIError` to answer.
    public static func validate(_ json: JSONValue, now: Date) throws(APIError) -> EventBatch {
        switch EventBatch.validate(json, now: now) {
        case .failure(let rejection):
            throw rejection.apiError
        case .success(let batch):
            return batch
        }
    }
}

extension EventBatchRejection {
    /// The API error for this rejection (`batch_too_large` or `validation_failed`).
    public var apiError: APIError {
        switch self {
        case .tooManyEvents(let count):
            return APIError(
                .batchTooLarge, "a batch holds at most \(EventBatch.maxEvents) events; this one has \(count)",
                details: details)
        case .invalid(let issues):
            let events = Set(issues.compactMap(\.index)).count
            let message =
                events > 0
                ? "\(events) event(s) in the batch are invalid; the batch was rejected whole"
                : "the batch is invalid"
            return APIError(.validationFailed, message, details: details)
        }
    }
}
