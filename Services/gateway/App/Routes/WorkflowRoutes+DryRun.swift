import BuzzKitCrypto
import BuzzKitHTTPServer
import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

extension Gateway {
    /// `POST /v1/workflows/{key}/dry-run {subscriber, event, events?, receipts?, arrivals?, acknowledged?,
    /// throttled?, start?, version?}`:
    /// `WorkflowDryRun.walk` on the current (or given) version with the tenant's quiet hours and
    /// default zone. `subscriber` is a subscriber id (read from the tenant's subscribers) or a
    /// sample `{id?, attributes?, timezone?, locale?}`. Nothing is stored and nothing is sent.
    func dryRunWorkflow(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try WorkflowRoutes.key(context)
        var v = Validator(
            try context.request.jsonBody(),
            allowed: [
                "subscriber", "event", "events", "receipts", "arrivals", "acknowledged", "throttled", "start", "version"
            ])
        var issues: [ValidationIssue] = []
        func issue(_ path: String, _ message: String) { issues.append(ValidationIssue(path: path, message: message)) }

        var start = Date()
        if v.has("start"), !v.isNull("start") {
            if let text = v.object["start"]?.stringValue, let date = EventTimestamp.parse(text) {
                start = date
            } else {
                issue("start", "must be an ISO 8601 date-time with an offset, such as 2025-01-31T18:00:00Z")
            }
        }
        var versionNumber: Int?
        if let value = v.object["version"], !value.isNull {
            if let n = value.intValue, n >= 1, n <= Int64(Int32.max) {
                versionNumber = Int(n)
            } else {
                issue("version", "must be a version number (1 or more)")
            }
        }
        // The subscriber: an id to read, or a sample.
        var subscriber: WorkflowSubscriber?
        var subscriberId: String?
        switch v.object["subscriber"] {
        case nil, .null?:
            issue("subscriber", "is required: a subscriber id or a sample {id, attributes, timezone, locale}")
        case .string(let id)?:
            if let problem = FieldRules.identifier(id) {
                issue("subscriber", problem)
            } else {
                subscriberId = id
            }
        case .object?:
            var s = Validator(
                v.object["subscriber"], allowed: ["id", "attributes", "timezone", "locale"], prefix: "subscriber.")
            let id = s.string("id", rule: FieldRules.identifierRule) ?? "dry-run-subscriber"
            let attributes = s.object("attributes") ?? [:]
            let timezone = s.string("timezone", rule: FieldRules.timezoneRule)
            let locale = s.string("locale", rule: FieldRules.localeRule)
            issues += s.issues
            subscriber = WorkflowSubscriber(id: id, attributes: attributes, timezone: timezone, locale: locale)
        default:
            issue("subscriber", "must be a subscriber id or a sample {id, attributes, timezone, locale}")
        }
        var eventReader = Validator(v.object["event"], allowed: ["name", "id", "data", "occurredAt"], prefix: "event.")
        let eventName = eventReader.string("name", rule: WorkflowRules.eventNameRule)
        let eventId = eventReader.string("id", rule: FieldRules.identifierRule) ?? "dry-run-event"
        let eventData = eventReader.object("data") ?? [:]
        var occurredAt: Date?
        if let text = eventReader.string("occurredAt", rule: WorkflowRules.timestampRule) {
            occurredAt = EventTimestamp.parse(text)
            if occurredAt == nil { issue("event.occurredAt", "must be an ISO 8601 date-time with an offset") }
        }
        issues += eventReader.issues
        var receipts: [String: WorkflowReceipts] = [:]
        if let value = v.object["receipts"], !value.isNull {
            if case .object(let byStep) = value {
                for (step, r) in byStep.sorted(by: { $0.key < $1.key }) {
                    var rr = Validator(r, allowed: ["delivered", "opened"], prefix: "receipts.\(step).")
                    receipts[step] = WorkflowReceipts(
                        delivered: rr.bool("delivered") ?? false, opened: rr.bool("opened") ?? false)
                    issues += rr.issues
                }
            } else {
                issue("receipts", "must be an object: receipts by send step name, {\"nudge\": {\"opened\": true}}")
            }
        }
        var arrivalSamples: [String: (name: String?, data: JSONValue, after: TimeInterval)] = [:]
        if let value = v.object["arrivals"], !value.isNull {
            if case .object(let byStep) = value {
                for (step, a) in byStep.sorted(by: { $0.key < $1.key }) {
                    var ar = Validator(a, allowed: ["name", "data", "after"], prefix: "arrivals.\(step).")
                    let name = ar.string("name", rule: WorkflowRules.eventNameRule)
                    let data = ar.object("data") ?? [:]
                    var after: TimeInterval = 0
                    if let text = ar.string("after", rule: WorkflowRules.durationRule), let d = WorkflowDuration(text) {
                        after = TimeInterval(d.seconds)
                    }
                    issues += ar.issues
                    arrivalSamples[step] = (name, data, after)
                }
            } else {
                issue(
                    "arrivals",
                    "must be an object: events by waitFor step name, {\"review\": {\"data\": {...}, \"after\": \"2h\"}}"
                )
            }
        }
        var acknowledged = Set<String>()
        if let value = v.object["acknowledged"], !value.isNull {
            if case .array(let items) = value, items.count <= 100,
                items.allSatisfy({ $0.stringValue.map(WorkflowRules.stepNameRule.accepts) ?? false })
            {
                acknowledged = Set(items.compactMap(\.stringValue))
            } else {
                issue(
                    "acknowledged",
                    "must be an array of at most 100 local send step names (1 to \(WorkflowLimits.maxNameLength) characters) whose plan a device acknowledges"
                )
            }
        }
        var throttled = Set<String>()
        if let value = v.object["throttled"], !value.isNull {
            if case .array(let items) = value, items.count <= 100,
                items.allSatisfy({ $0.stringValue.map(WorkflowRules.stepNameRule.accepts) ?? false })
            {
                throttled = Set(items.compactMap(\.stringValue))
            } else {
                issue(
                    "throttled",
                    "must be an array of at most 100 throttle step names (1 to \(WorkflowLimits.maxNameLength) characters) whose limit the sample has reached"
                )
            }
        }
        // Further trigger events (issue 28): a digest collects those of its key before its close.
        var further: [(id: String?, name: String?, data: JSONValue, after: TimeInterval)] = []
        if let value = v.object["events"], !value.isNull {
            if case .array(let items) = value, items.count <= WorkflowDryRunRules.maxEvents {
                for (i, item) in items.enumerated() {
                    var er = Validator(item, allowed: ["id", "name", "data", "after"], prefix: "events[\(i)].")
                    let id = er.string("id", rule: FieldRules.identifierRule)
                    let name = er.string("name", rule: WorkflowRules.eventNameRule)
                    let data = er.object("data") ?? [:]
                    var after: TimeInterval = 0
                    if let text = er.string("after", rule: WorkflowRules.durationRule), let d = WorkflowDuration(text) {
                        after = TimeInterval(d.seconds)
                    }
                    issues += er.issues
                    further.append((id, name, data, after))
                }
            } else {
                issue(
                    "events",
                    "must be an array of at most \(WorkflowDryRunRules.maxEvents) further trigger events {id?, name?, data?, after?}"
                )
            }
        }
        try Validator.throwIfAny(v.issues + issues)

        // The version to walk.
        let rows: PostgresRows
        if let versionNumber {
            rows = try await postgres.query(
                """
                SELECT v.version, v.definition FROM workflow_versions v JOIN workflows w ON w.tenant_id = v.tenant_id AND w.key = v.workflow_key
                WHERE v.tenant_id = $1::uuid AND v.workflow_key = $2 AND v.version = $3 AND w.deleted_at IS NULL
                """, [tenant, key, versionNumber])
        } else {
            rows = try await postgres.query(
                """
                SELECT v.version, v.definition FROM workflows w JOIN workflow_versions v
                  ON v.tenant_id = w.tenant_id AND v.workflow_key = w.key AND v.version = w.current_version
                WHERE w.tenant_id = $1::uuid AND w.key = $2 AND w.deleted_at IS NULL
                """, [tenant, key])
        }
        guard let row = rows.first else {
            throw APIError.notFound(versionNumber == nil ? "workflow" : "workflow version")
        }
        let version = try row.decode(Int.self, named: "version")
        guard
            case .success(let definition) = WorkflowDefinition.parse(
                try WorkflowRoutes.definitionJSON(try row.decode(String.self, named: "definition")))
        else { throw APIError.internalError }

        if let subscriberId {
            let found = try await postgres.query(
                "SELECT attributes, timezone, locale FROM subscribers WHERE tenant_id = $1::uuid AND id = $2",
                [tenant, subscriberId])
            guard let s = found.first else {
                // A request naming a subscriber that is not there: 404, as a path naming nothing.
                throw APIError(
                    .notFound, "subscriber \(subscriberId) was not found",
                    details: [["path": "subscriber", "message": .string("no subscriber with the id \(subscriberId)")]])
            }
            subscriber = WorkflowSubscriber(
                id: subscriberId, attributes: try s.decode(JSONValue.self, named: "attributes"),
                timezone: try s.decode(String?.self, named: "timezone"),
                locale: try s.decode(String?.self, named: "locale"))
        }
        guard let subscriber else { throw APIError.internalError }
        let settings = try await workflowSettings(tenant)
        let trigger = WorkflowEvent(
            id: eventId, name: eventName ?? definition.trigger.event, data: eventData,
            occurredAt: occurredAt ?? start)
        var arrivals: [String: WorkflowDryRun.Arrival] = [:]
        for (step, sample) in arrivalSamples {
            var name = sample.name
            if name == nil, case .waitFor(let w)? = definition.index[step]?.step.kind { name = w.event }
            arrivals[step] = WorkflowDryRun.Arrival(
                event: WorkflowEvent(
                    id: "dry-run-arrival-\(step)", name: name ?? step, data: sample.data, occurredAt: start),
                after: sample.after)
        }
        let events = further.enumerated().map { i, sample in
            WorkflowDryRun.Arrival(
                event: WorkflowEvent(
                    id: sample.id ?? "dry-run-event-\(i + 1)", name: sample.name ?? trigger.name, data: sample.data,
                    occurredAt: start.addingTimeInterval(sample.after)),
                after: sample.after)
        }
        func walk(_ policy: [String: SuppressionReason]) -> WorkflowDryRun.Timeline {
            WorkflowDryRun.walk(
                definition, subscriber: subscriber, event: trigger, receipts: receipts,
                arrivals: arrivals, acknowledged: acknowledged, events: events, throttled: throttled, policy: policy,
                start: start, quietHours: settings.quietHours, defaultTimeZone: settings.defaultTimeZone)
        }
        var timeline = walk([:])
        let policy = try await dryRunPolicy(tenant: tenant, subscriber: subscriber, definition, timeline, at: start)
        if !policy.isEmpty { timeline = walk(policy) }
        guard case .object(var body) = timeline.jsonValue else { throw APIError.internalError }
        body["key"] = .string(key)
        body["version"] = .int(Int64(version))
        return .json(.object(body))
    }
}

extension Gateway {
    /// The send policy's decision for each send step of a dry run, by step name, evaluated without
    /// counting anything (`Policy.evaluate`: decided, then rolled back; nothing is kept): the sends of
    /// the first walk in their order, with the category they rendered, then every other send step
    /// with its literal category (a step the first walk did not reach may be reached once a
    /// `{suppressed}` branch turns). Only the suppressed ones are answered.
    func dryRunPolicy(
        tenant: UUID, subscriber: WorkflowSubscriber, _ definition: WorkflowDefinition,
        _ timeline: WorkflowDryRun.Timeline, at now: Date
    ) async throws -> [String: SuppressionReason] {
        var steps: [String] = []
        var categories: [String: String?] = [:]
        for entry in timeline.entries where entry.kind == .send {
            guard let step = entry.step, categories[step] == nil, entry.detail["suppressed"] == nil else { continue }
            steps.append(step)
            categories[step] = .some(entry.detail["content"]?["category"]?.stringValue)
        }
        for step in definition.index.names where categories[step] == nil {
            guard case .send(let send)? = definition.index[step]?.step.kind, send.policy != .drop else { continue }
            let literal = send.content["category"]?.stringValue
            if let literal, literal.contains("{{") { continue }
            steps.append(step)
            categories[step] = .some(literal)
        }
        guard !steps.isEmpty else { return [:] }
        let candidates = steps.map { step in
            PolicyCandidate(
                messageId: UUID.nameBased("buzzkit.dry-run:\(step)"), subscriberId: subscriber.id,
                category: categories[step] ?? nil)
        }
        let verdicts = try await policy.evaluate(candidates, tenant: tenant, now: now)
        var answer: [String: SuppressionReason] = [:]
        for (step, candidate) in zip(steps, candidates) {
            if let reason = verdicts[candidate]?.suppressed { answer[step] = reason }
        }
        return answer
    }
}

/// The dry run's own bounds.
enum WorkflowDryRunRules {
    /// Further trigger events one dry run takes.
    static let maxEvents = 1000
}
