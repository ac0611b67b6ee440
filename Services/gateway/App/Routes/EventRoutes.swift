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
    /// The batch's rules as `EventBatch.validate` applies them (lengths in characters and in bytes of UTF-8).
    static let identityRule = TextRule.length(1, EventBatch.maxIdentityBytes).limited(
        toUTF8Bytes: EventBatch.maxIdentityBytes)
    static let eventIDRule = TextRule.length(1, EventBatch.maxEventIDBytes).limited(
        toUTF8Bytes: EventBatch.maxEventIDBytes)
    /// An ordinary event's name: no control characters (C0, DEL) and no leading `$` (reserved names are listed apart).
    static let nameRule = TextRule(
        maxLength: EventBatch.maxNameBytes, pattern: #"^[^$\x00-\x1F\x7F][^\x00-\x1F\x7F]*$"#,
        problem: "must not start with $ or contain control characters"
    ) { name in
        !name.hasPrefix("$") && !name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }.limited(toUTF8Bytes: EventBatch.maxNameBytes)

    /// When an event happened: a window around the server's clock, which JSON Schema cannot
    /// compare with, so the rule is a format of its own (the value is an RFC 3339 date-time).
    static let timestamp = Schema.custom(
        format: "buzzkit-event-time",
        """
        When it happened: an RFC 3339 date-time with an offset (2025-01-31T18:00:00Z) from 2000-01-01 to 24 hours \
        ahead of the server's clock; any other moment is 422 validation_failed
        """, example: "2025-01-31T18:00:00Z")

    /// An event the app defines (any name not starting with `$`), or one of the reserved `$` events
    /// with exactly the data fields `ReservedEvent` lists. Unknown members of the event are ignored.
    static var trackedEvent: JSONValue {
        let ordinary = eventSchema(
            name: Schema.string(nameRule), data: Schema.nullable(Schema.anyObject), dataRequired: false)
        let reserved = ReservedEvent.all.map { event -> JSONValue in
            var properties: [String: JSONValue] = [:]
            for field in event.fields {
                var schema: JSONValue =
                    switch field.type {
                    case .string:
                        field.allowedValues.isEmpty
                            ? Schema.string() : Schema.string(enumeration: field.allowedValues)
                    case .number: ["type": "number"]
                    case .bool: ["type": "boolean"]
                    }
                if !field.required { schema = Schema.nullable(schema) }
                properties[field.name] = schema
            }
            let required = event.fields.filter(\.required).map(\.name)
            let data = Schema.object(properties, required: required)
            return eventSchema(
                name: ["const": .string(event.name)], data: required.isEmpty ? Schema.nullable(data) : data,
                dataRequired: !required.isEmpty)
        }
        return ["oneOf": .array([ordinary] + reserved)]
    }

    private static func eventSchema(name: JSONValue, data: JSONValue, dataRequired: Bool) -> JSONValue {
        Schema.object(
            [
                "id": Schema.string(
                    eventIDRule,
                    "Client-generated: the event's identity; an id already received (earlier in the batch or before) is not stored again"
                ), "name": name,
                "data": data, "timestamp": timestamp
            ],
            required: ["id", "name", "timestamp"] + (dataRequired ? ["data"] : []), additional: true)
    }

    /// Exactly one identity: `subscriberId` or `anonymousId` (the other absent or null).
    static var batch: JSONValue {
        let body = Schema.object(
            [
                "subscriberId": Schema.nullable(Schema.string(identityRule)),
                "anonymousId": Schema.nullable(Schema.string(identityRule)),
                "events": Schema.array(trackedEvent, minItems: 1, maxItems: EventBatch.maxEvents)
            ], required: ["events"], additional: true)
        // Exactly one identity, as conditionals (a generator still makes one type of the batch).
        let identities = ["subscriberId", "anonymousId"]
        return Schema.adding(
            [
                "allOf": [
                    ["if": Schema.absent(identities), "then": false],
                    ["if": Schema.given("subscriberId"), "then": Schema.absent(["anonymousId"])]
                ]
            ], to: body)
    }

    /// The batch, named so a client generator makes a type of it.
    static var components: [String: JSONValue] { ["EventBatch": batch] }

    static let storedEvent = Schema.object([
        "id": Schema.string(), "name": Schema.string(), "data": Schema.anyObject, "subscriberId": Schema.string(),
        "anonymousId": Schema.nullable(Schema.string()), "timestamp": Schema.timestamp, "receivedAt": Schema.timestamp
    ])

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "POST", "/v1/events", id: "trackEvents",
                "Track a batch of at most 100 events for one identity (deduplicated by event id)",
                access: .tenant(.eventsWrite, clientKeys: true),
                body: Schema.ref("EventBatch"),
                response: Schema.object(["batchId": Schema.string(), "accepted": Schema.integer]),
                status: 202, errors: [.batchTooLarge, .ingestUnavailable],
                handler: { g, c in try await g.trackEvents(c) }),
            GatewayRoute(
                "GET", "/v1/subscribers/{id}/events", id: "listSubscriberEvents",
                "A subscriber's events, newest first (filter by name and since)",
                access: .tenant(.subscribersRead, clientKeys: false), path: SubscriberRoutes.idPath,
                query: [
                    QueryParameter("name", "Only events of this name (empty: every name)", schema: ["type": "string"]),
                    QueryParameter(
                        "since", "Only events that happened at or after this moment (empty: no bound)",
                        schema: [
                            "anyOf": [
                                ["type": "string", "maxLength": 0],
                                Schema.string(format: "date-time")
                            ]
                        ])
                ],
                response: storedEvent, paginated: true,
                errors: [.notFound], handler: { g, c in try await g.listSubscriberEvents(c) })
        ]
    }
}

extension Gateway {
    func trackEvents(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let intake = EventIntake(
            producer: IngestProducer(redis: redis, stream: configuration.ingestStream), logger: logger)
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
        let exists = try await postgres.query(
            "SELECT 1 FROM subscribers WHERE tenant_id = $1::uuid AND id = $2",
            [tenant, subscriber])
        guard !exists.isEmpty else { throw APIError.notFound("subscriber \(subscriber)") }
        let query = context.request.query
        let page = try await EventQueries.list(
            postgres: postgres, tenantId: tenant, subscriberId: subscriber,
            name: query["name"], since: query["since"], cursor: query["cursor"],
            limit: query["limit"])
        return .json(page.jsonValue, metadata: page.metadata)
    }
}
