import Foundation

/// Why a batch was refused as a whole.
public enum EventBatchRejection: Error, Sendable, Hashable {
    /// More than `EventBatch.maxEvents` events; nothing else was checked.
    case tooManyEvents(count: Int)
    /// Every problem found, in event order.
    case invalid([ValidationIssue])
}

extension EventBatch {
    /// Reads and checks a request body, collecting every problem rather than stopping at the first.
    ///
    /// Rules: exactly one of `subscriberId` / `anonymousId` (non-empty string, at most 256 bytes);
    /// `events` an array of 1 to 100 objects; per event `id` (non-empty string, at most 128 bytes),
    /// `name` (non-empty, at most 128 bytes of UTF-8, no control characters; `$` names only those in
    /// `ReservedEvent.all`, with exactly the fields that event documents), `data` (a JSON object,
    /// default `{}`), `timestamp` (ISO 8601 with an offset, at most 24 hours ahead of `now`). An id
    /// repeated within the batch is the same event, as it is across batches (events are
    /// deduplicated by id): the first is kept, the later ones are dropped. Unknown top-level or
    /// event members are ignored.
    public static func validate(_ body: JSONValue, now: Date = Date()) -> Result<EventBatch, EventBatchRejection> {
        guard case .object(let object) = body else {
            return .failure(.invalid([ValidationIssue(path: "body", message: "the body must be a JSON object")]))
        }
        var issues: [ValidationIssue] = []
        var identity: EventIdentity?
        // `JSONValue?.none`, not `nil`: JSONValue is nil-literal expressible, and `nil` would be `.null`.
        let subscriber = object["subscriberId"].flatMap { $0.isNull ? JSONValue?.none : $0 }
        let anonymous = object["anonymousId"].flatMap { $0.isNull ? JSONValue?.none : $0 }
        switch (subscriber, anonymous) {
        case (nil, nil):
            issues.append(
                .init(index: nil, field: "subscriberId", message: "one of subscriberId or anonymousId is required"))
        case (.some, .some):
            issues.append(
                .init(index: nil, field: "anonymousId", message: "send either subscriberId or anonymousId, not both"))
        case (.some(let value), nil):
            if let id = identityValue(value, field: "subscriberId", into: &issues) { identity = .subscriber(id) }
        case (nil, .some(let value)):
            if let id = identityValue(value, field: "anonymousId", into: &issues) { identity = .anonymous(id) }
        }
        guard case .array(let items)? = object["events"] else {
            issues.append(.init(index: nil, field: "events", message: "events must be an array of events"))
            return .failure(.invalid(issues))
        }
        if items.count > maxEvents { return .failure(.tooManyEvents(count: items.count)) }
        if items.isEmpty { issues.append(.init(index: nil, field: "events", message: "events must not be empty")) }
        let latest = EventTimestamp.microseconds(now) + Int64(maxFutureSkew * 1_000_000)
        var events: [TrackedEvent] = []
        events.reserveCapacity(items.count)
        var seen: Set<String> = []
        for (index, item) in items.enumerated() {
            if let event = validateEvent(item, index: index, latest: latest, into: &issues),
                seen.insert(event.id).inserted
            {
                events.append(event)
            }
        }
        guard issues.isEmpty, let identity else { return .failure(.invalid(issues)) }
        return .success(EventBatch(identity: identity, events: events))
    }

    /// The problem with an event name's shape (emptiness, length, control characters), or nil.
    public static func nameShapeProblem(_ name: String) -> String? {
        if name.isEmpty { return "name must not be empty" }
        let bytes = name.utf8.count
        if bytes > maxNameBytes { return "name is \(bytes) bytes of UTF-8; the limit is \(maxNameBytes)" }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "name must not contain control characters"
        }
        return nil
    }

    // MARK: - Internals

    private static func identityValue(_ value: JSONValue, field: String, into issues: inout [ValidationIssue])
        -> String?
    {
        guard case .string(let id) = value, !id.isEmpty else {
            issues.append(.init(index: nil, field: field, message: "\(field) must be a non-empty string"))
            return nil
        }
        guard id.utf8.count <= maxIdentityBytes else {
            issues.append(.init(index: nil, field: field, message: "\(field) is longer than \(maxIdentityBytes) bytes"))
            return nil
        }
        return id
    }

    private static func validateEvent(
        _ item: JSONValue, index: Int, latest: Int64,
        into issues: inout [ValidationIssue]
    ) -> TrackedEvent? {
        guard case .object(let event) = item else {
            issues.append(.init(index: index, field: "event", message: "each event must be a JSON object"))
            return nil
        }
        let before = issues.count
        var id = ""
        switch event["id"] {
        case .string(let s)? where !s.isEmpty && s.utf8.count <= maxEventIDBytes: id = s
        case .string(let s)? where !s.isEmpty:
            issues.append(.init(index: index, field: "id", message: "id is longer than \(maxEventIDBytes) bytes"))
        default:
            issues.append(
                .init(
                    index: index, field: "id",
                    message: "id must be a non-empty string (client-generated, unique per event)"))
        }
        var data: [String: JSONValue] = [:]
        switch event["data"] {
        case nil, .null?: break
        case .object(let o)?: data = o
        default: issues.append(.init(index: index, field: "data", message: "data must be a JSON object"))
        }
        var name = ""
        if case .string(let s)? = event["name"] {
            name = s
            if let problem = nameShapeProblem(s) {
                issues.append(.init(index: index, field: "name", message: problem))
            } else if s.hasPrefix("$") {
                if let reserved = ReservedEvent.named(s) {
                    for problem in reserved.problems(in: data) {
                        issues.append(.init(index: index, field: problem.field, message: problem.message))
                    }
                } else {
                    issues.append(
                        .init(
                            index: index, field: "name",
                            message: "\(s) is not a reserved event; names starting with $ are reserved for the SDK"))
                }
            }
        } else {
            issues.append(.init(index: index, field: "name", message: "name must be a string"))
        }
        var micros: Int64 = 0
        if case .string(let text)? = event["timestamp"], let parsed = EventTimestamp.parseMicroseconds(text) {
            micros = parsed
            if parsed > latest {
                issues.append(
                    .init(index: index, field: "timestamp", message: "timestamp is more than 24 hours in the future"))
            } else if parsed < Self.earliestMicroseconds {
                issues.append(.init(index: index, field: "timestamp", message: "timestamp is before 2000-01-01"))
            }
        } else {
            issues.append(
                .init(
                    index: index, field: "timestamp",
                    message: "timestamp must be an ISO 8601 date-time with an offset, e.g. 2024-05-01T12:00:00.250Z"))
        }
        guard issues.count == before else { return nil }
        return TrackedEvent(id: id, name: name, data: data, timestampMicroseconds: micros)
    }

    /// 2000-01-01T00:00:00Z: older timestamps are clock errors, not events.
    static let earliestMicroseconds: Int64 = 946_684_800 * 1_000_000
}

extension EventBatchRejection {
    /// `details` for the API error: one `ValidationIssue.eventJSONValue` per issue, or `{limit, count}`.
    public var details: JSONValue {
        switch self {
        case .tooManyEvents(let count): return ["limit": .int(Int64(EventBatch.maxEvents)), "count": .int(Int64(count))]
        case .invalid(let issues): return .array(issues.map(\.eventJSONValue))
        }
    }
}

extension ValidationIssue {
    /// An issue of a batch (`index` nil) or of its event at `index`, about its member `field`.
    init(index: Int?, field: String, message: String) {
        self.init(path: field, message: message, index: index)
    }

    /// `jsonValue` (`path`, `message`, `index`) with two members the event routes answered before
    /// the shape was shared, kept so clients that read them go on working: `field` (the same as
    /// `path`) and `index` null for an issue of the batch or query as a whole.
    public var eventJSONValue: JSONValue {
        guard case .object(var object) = jsonValue else { return jsonValue }
        object["field"] = .string(path)
        if index == nil { object["index"] = .null }
        return .object(object)
    }
}
