import BuzzKitAudience
import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitWire
import Foundation

/// A validated `POST /v1/messages` body.
public struct MessageRequest: Sendable, Hashable {
    public var target: MessageTarget
    public var content: MessageContent
    /// The content members as given (stored in `messages.content`, re-read by the sender).
    public var contentJSON: JSONValue
    /// `sandbox` or `production`: only devices of that environment; nil: all.
    public var environment: String?
}

/// `POST /v1/messages` minus HTTP: validate, store the message (`queued`), put it on `bk:messages`
/// (an audience) or its direct sibling (a short `to` list).
///
/// Order and durability (the outbox rule): the row is inserted first, then the entry is added. If
/// the `XADD` fails after the insert, the request still succeeds (202): the message is durable in
/// Postgres and apns-sender's sweeper re-enqueues messages left `queued` (see `OutboxSweeper`).
///
/// Errors (`APIError`): `invalid_json` 400; `validation_failed` 422 with every problem of the
/// target and the content at once in `details` (`[{"path", "message"}]`), including a payload
/// that would exceed 4096 bytes, and an expression that does not parse (with its line and column).
/// A `segment` is resolved to its saved expression when the message is accepted; an unknown
/// segment is `404 not_found` (details on `segment`).
public struct MessageIntake: Sendable {
    public static let maxSubscribersPerMessage = 1000
    /// The content members (what `MessageContent.validate` reads).
    public static let contentMembers: Set<String> = [
        "title", "subtitle", "body", "data", "deepLink", "action", "actions", "category", "image", "sound",
        "badge", "threadId", "interruptionLevel", "priority", "expiresAt", "collapseId"
    ]
    public static let targetMembers: Set<String> = ["to", "topic", "segment", "where"]

    /// What the 202 answers.
    public struct Accepted: Sendable, Hashable {
        public var id: UUID
        /// `{"id", "status": "queued", "audienceSize": null}`.
        public var jsonValue: JSONValue {
            ["id": .string(id.lowercasedText), "status": .string(MessageStatus.queued.rawValue), "audienceSize": .null]
        }
    }

    public let postgres: PostgresClient
    public let redis: RedisClient
    public let stream: StreamName
    let logger: Logger

    public init(postgres: PostgresClient, redis: RedisClient, stream: StreamName = .messages, logger: Logger) {
        self.postgres = postgres
        self.redis = redis
        self.stream = stream
        self.logger = logger
    }

    /// Validates, stores and queues `json`.
    public func accept(tenantId: UUID, json: JSONValue, now: Date = Date()) async throws -> Accepted {
        let message = try await prepare(tenantId: tenantId, json: json, now: now)
        return try await store([message])[0].get()
    }

    /// A validated message with its target resolved and its id chosen, ready for `store`.
    public struct Prepared: Sendable {
        public var id: UUID
        public var tenantId: UUID
        public var request: MessageRequest
    }

    /// Validates `json` and resolves a `segment` to its saved expression (the one read of the
    /// database a request makes on its own); the write is `store`'s, which batches.
    public func prepare(tenantId: UUID, json: JSONValue, now: Date = Date()) async throws -> Prepared {
        try await resolve(tenantId: tenantId, request: try Self.validate(json, now: now))
    }

    /// `request` (validated) as stored when it needs no read first (`resolve` does them): nil
    /// when it names a segment or a category.
    public static func prepared(tenantId: UUID, request: MessageRequest) -> Prepared? {
        if case .expression(_, _?) = request.target { return nil }
        if request.content.category != nil { return nil }
        return Prepared(id: UUID.timeOrdered(), tenantId: tenantId, request: request)
    }

    /// `request` (validated) with its segment resolved and its category checked.
    public func resolve(tenantId: UUID, request: MessageRequest) async throws -> Prepared {
        if let prepared = Self.prepared(tenantId: tenantId, request: request) { return prepared }
        var request = request
        if case .expression(_, let segment?) = request.target {
            let rows = try await postgres.query(
                "SELECT expression FROM segments WHERE tenant_id = $1::uuid AND key = $2",
                [tenantId, segment])
            guard let expression = try rows.first?.decode(String.self, at: 0) else {
                // A request naming something that does not exist, like a path naming nothing: 404.
                throw APIError(
                    .notFound, "segment \(segment) was not found",
                    details: [["path": "segment", "message": .string("no segment with the key \(segment)")]])
            }
            request.target = .expression(expression, segment: segment)
        }
        if let category = request.content.category,
            !(try await Policy(postgres: postgres).missingCategories([category], tenant: tenantId)).isEmpty
        {
            throw ValidationIssue.apiError(
                [ValidationIssue(path: "category", message: "no category with the key \(category)")],
                message: "the message names an unknown category: \(category)")
        }
        return Prepared(id: UUID.timeOrdered(), tenantId: tenantId, request: request)
    }

    /// Stores `messages` (`queued`) with ONE statement and one commit, then puts them on their
    /// streams (`StreamName.forMessage(to:)`) with one pipelined XADD per stream: concurrent
    /// requests share both (the gateway's coalescer hands a batch of them). One result per
    /// message, in order. When the batch statement fails, each message is stored on its own (in
    /// a task), so one bad row cannot fail the others and each caller sees its own error.
    ///
    /// No task otherwise: the statement answers on its Postgres connection's thread, the XADDs on
    /// a Redis connection's, and `completion` gets the results there (the gateway answers each
    /// request from it).
    public func store(
        _ messages: [Prepared], completion: @escaping @Sendable ([Result<Accepted, any Error>]) -> Void
    ) {
        guard !messages.isEmpty else { return completion([]) }
        ledger.insertMessages(messages.map(Self.row)) { [self] inserted in
            switch inserted {
            case .success:
                let results: [Result<Accepted, any Error>] = messages.map { .success(Accepted(id: $0.id)) }
                enqueue(streams(messages, results)[...]) { completion(results) }
            case .failure:
                Task {
                    let results = await insertEach(messages)
                    enqueue(streams(messages, results)[...]) { completion(results) }
                }
            }
        }
    }

    /// `store` for a caller in a task (`accept`).
    public func store(_ messages: [Prepared]) async -> [Result<Accepted, any Error>] {
        await withCheckedContinuation { continuation in
            store(messages) { continuation.resume(returning: $0) }
        }
    }

    /// Each message on its own (after its batch's statement failed): one result each.
    private func insertEach(_ messages: [Prepared]) async -> [Result<Accepted, any Error>] {
        var results: [Result<Accepted, any Error>] = []
        for message in messages {
            do {
                try await ledger.insertMessages([Self.row(message)])
                results.append(.success(Accepted(id: message.id)))
            } catch {
                results.append(.failure(error))
            }
        }
        return results
    }

    /// The stored messages' entries, by stream: one per message to fan out, ONE per tenant for
    /// the direct messages (its ids in the batch's order, `MessageEntry.messageIds`), so a batch
    /// of one-subscriber messages costs one XADD, one entry read and one XACK.
    func streams(_ messages: [Prepared], _ results: [Result<Accepted, any Error>]) -> [(StreamName, [MessageEntry])] {
        var audiences: [MessageEntry] = []
        var direct: [UUID: [UUID]] = [:]
        var tenants: [UUID] = []
        for (message, result) in zip(messages, results) where (try? result.get()) != nil {
            if message.request.target.isDirect {
                if direct[message.tenantId] == nil { tenants.append(message.tenantId) }
                direct[message.tenantId, default: []].append(message.id)
            } else {
                audiences.append(MessageEntry(tenantId: message.tenantId, messageId: message.id))
            }
        }
        var streams: [(StreamName, [MessageEntry])] = []
        if !tenants.isEmpty {
            streams.append(
                (stream.direct, tenants.map { MessageEntry(tenantId: $0, messageIds: direct[$0] ?? []) }))
        }
        if !audiences.isEmpty { streams.append((stream, audiences)) }
        return streams
    }

    /// One pipelined XADD per stream, one after the other, then `done`.
    private func enqueue(
        _ streams: ArraySlice<(StreamName, [MessageEntry])>, then done: @escaping @Sendable () -> Void
    ) {
        guard let (target, entries) = streams.first else { return done() }
        redis.xaddBatch(target.rawValue, entries: entries.map(\.fields)) { [self] added in
            if case .failure(let error) = added { enqueueFailed(entries, target, error) }
            enqueue(streams.dropFirst(), then: done)
        }
    }

    /// Stored: the sweeper in apns-sender re-enqueues them. The callers still get their 202.
    private func enqueueFailed(_ entries: [MessageEntry], _ target: StreamName, _ error: any Error) {
        logger.warning(
            "messages.enqueue.failed",
            metadata: ["messages": String(entries.count), "stream": target.rawValue, "error": "\(error)"])
    }

    private var ledger: Ledger { Ledger(postgres: postgres, logger: logger) }

    /// A message's row, as the ledger inserts it.
    private static func row(_ message: Prepared) -> NewMessage {
        NewMessage(
            id: message.id, tenantId: message.tenantId, target: message.request.target,
            content: message.request.contentJSON, environment: message.request.environment)
    }

    /// The validation alone (no I/O): every problem of target and content at once.
    public static func validate(_ json: JSONValue, now: Date = Date()) throws(APIError) -> MessageRequest {
        guard case .object(let object) = json else {
            throw ValidationIssue.apiError(
                [ValidationIssue(path: "body", message: "must be a JSON object")],
                message: "the request is invalid: the body must be a JSON object")
        }
        var issues: [ValidationIssue] = []
        func add(_ path: String, _ message: String) { issues.append(ValidationIssue(path: path, message: message)) }
        for name in object.keys.sorted()
        where !contentMembers.contains(name) && !targetMembers.contains(name) && name != "environment" {
            add(name, "is not a known field")
        }
        let given = targetMembers.filter { object[$0].map { !$0.isNull } ?? false }.sorted()
        var target: MessageTarget?
        if given.count > 1 {
            add(given[1], "give exactly one target: to, topic, segment or where (got \(given.joined(separator: ", ")))")
        }
        if given.isEmpty { add("to", "a target is required: to, topic, segment or where") }
        if let raw = object["where"], !raw.isNull {
            if let text = raw.stringValue {
                do {
                    _ = try AudienceExpression.parse(text)
                    target = .expression(text, segment: nil)
                } catch {
                    add("where", error.description)
                }
            } else {
                add("where", "must be an audience expression string, e.g. plan == \"pro\"")
            }
        }
        if let raw = object["segment"], !raw.isNull {
            if let key = raw.stringValue, !key.isEmpty, key.utf8.count <= 128, key.utf8.allSatisfy(isKeyCharacter) {
                target = .expression("", segment: key)  // the expression is read when the message is accepted
            } else {
                add("segment", "must be a segment key (1 to 128 of letters, digits, _ - . :)")
            }
        }
        if let raw = object["to"], !raw.isNull {
            if let id = raw.stringValue {
                if let problem = subscriberIdProblem(id) { add("to", problem) } else { target = .subscribers([id]) }
            } else if let list = raw.arrayValue, !list.isEmpty, list.count <= maxSubscribersPerMessage {
                var ids: [String] = []
                var seen = Set<String>()
                for (index, item) in list.enumerated() {
                    guard let id = item.stringValue else {
                        add("to[\(index)]", "must be a subscriber id string")
                        continue
                    }
                    if let problem = subscriberIdProblem(id) {
                        add("to[\(index)]", problem)
                        continue
                    }
                    if seen.insert(id).inserted { ids.append(id) }
                }
                target = .subscribers(ids)
            } else {
                add("to", "must be a subscriber id or an array of 1 to \(maxSubscribersPerMessage) subscriber ids")
            }
        }
        if let raw = object["topic"], !raw.isNull {
            if let key = raw.stringValue, !key.isEmpty, key.utf8.count <= 128, key.utf8.allSatisfy(isKeyCharacter) {
                target = .topic(key)
            } else {
                add("topic", "must be a topic key (1 to 128 of letters, digits, _ - . :)")
            }
        }
        var environment: String?
        if let raw = object["environment"], !raw.isNull {
            if let value = raw.stringValue, value == "sandbox" || value == "production" {
                environment = value
            } else {
                add("environment", "must be one of: sandbox, production")
            }
        }
        var contentObject: [String: JSONValue] = [:]
        for (name, value) in object where contentMembers.contains(name) && !value.isNull { contentObject[name] = value }
        let contentJSON = JSONValue.object(contentObject)
        var content: MessageContent?
        switch MessageContent.validate(contentJSON, now: now) {
        case .success(let value): content = value
        case .failure(let rejection): issues += rejection.issues
        }
        guard issues.isEmpty, let target, let content else {
            let summary = issues.prefix(3).map { "\($0.path) \($0.message)" }.joined(separator: "; ")
            throw ValidationIssue.apiError(issues, message: "the message is invalid: \(summary)")
        }
        return MessageRequest(target: target, content: content, contentJSON: contentJSON, environment: environment)
    }

    static func subscriberIdProblem(_ id: String) -> String? {
        if id.isEmpty || id.unicodeScalars.count > 256 { return "must be a subscriber id of 1 to 256 characters" }
        if id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "must not contain control characters"
        }
        return nil
    }

    static func isKeyCharacter(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
            || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: ":")
    }
}
