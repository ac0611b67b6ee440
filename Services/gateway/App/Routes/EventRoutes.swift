import BuzzKitHTTPServer
import BuzzKitIntake
import BuzzKitQueries
import BuzzKitWire
import Foundation

/// Events from backends and the SDK. `POST /v1/events` validates a batch (all problems at once,
/// each with the event's index) and answers 202 only once the batch is durably on `bk:ingest`;
/// the ingest service stores it, deduplicated by event id. `GET /v1/subscribers/{id}/events` reads
/// a subscriber's stream, including events sent under anonymous ids linked to it by identify.
enum EventRoutes {
    static let trackedEvent = Schema.object([
        "id": Schema.string(maxLength: 128), "name": Schema.string(maxLength: 128), "data": Schema.anyObject,
        "timestamp": Schema.timestamp,
    ], required: ["id", "name"])

    static let storedEvent = Schema.object([
        "id": Schema.string(), "name": Schema.string(), "data": Schema.anyObject, "subscriberId": Schema.string(),
        "anonymousId": Schema.nullable(Schema.string()), "timestamp": Schema.timestamp, "receivedAt": Schema.timestamp,
    ])

    static var routes: [GatewayRoute] {
        [
            GatewayRoute("POST", "/v1/events", id: "trackEvents",
                         "Track a batch of at most 100 events for one identity (deduplicated by event id)",
                         access: .tenant(.eventsWrite, clientKeys: true),
                         body: Schema.object([
                             "subscriberId": Schema.string(maxLength: 256), "anonymousId": Schema.string(maxLength: 256),
                             "events": Schema.array(trackedEvent, minItems: 1, maxItems: EventBatch.maxEvents),
                         ], required: ["events"]),
                         response: Schema.object(["batchId": Schema.string(), "accepted": Schema.integer]),
                         status: 202, errors: [.batchTooLarge, .ingestUnavailable],
                         handler: { g, c in try await g.trackEvents(c) }),
            GatewayRoute("GET", "/v1/subscribers/{id}/events", id: "listSubscriberEvents",
                         "A subscriber's events, newest first (filter by name and since)",
                         access: .tenant(.subscribersRead, clientKeys: false), response: storedEvent, paginated: true,
                         errors: [.notFound], handler: { g, c in try await g.listSubscriberEvents(c) }),
        ]
    }
}

extension Gateway {
    func trackEvents(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let intake = EventIntake(producer: IngestProducer(redis: redis, stream: configuration.ingestStream), logger: logger)
        // A client (SDK) key is safe to ship in an app: it may only track events, never read
        // them, and only for its own installation's identities (403 forbidden_installation).
        guard context.key?.kind == .client else {
            let accepted = try await intake.accept(tenantId: tenant, body: context.request.body)
            return .json(accepted.jsonValue, status: 202)
        }
        guard let installation = context.installation else { throw InstallationAuthenticator.required }
        // Validated once; the identity check is the installation's (which re-reads an
        // installation identified on another replica before refusing).
        let now = intake.now
        let batch = try EventIntake.validate(EventIntake.parse(context.request.body), now: now)
        _ = try await installations.authorize(installation, identity: batch.identity.value)
        let accepted = try await intake.enqueue(batch, tenantId: tenant, receivedAt: now)
        return .json(accepted.jsonValue, status: 202)
    }

    func listSubscriberEvents(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let subscriber = try SubscriberRoutes.subscriberID(context)
        let exists = try await postgres.query("SELECT 1 FROM subscribers WHERE tenant_id = $1::uuid AND id = $2",
                                              [tenant, subscriber])
        guard !exists.isEmpty else { throw APIError.notFound("subscriber \(subscriber)") }
        let query = context.request.query
        let page = try await EventQueries.list(postgres: postgres, tenantId: tenant, subscriberId: subscriber,
                                               name: query["name"], since: query["since"], cursor: query["cursor"],
                                               limit: query["limit"])
        return .json(page.jsonValue, metadata: page.metadata)
    }
}
