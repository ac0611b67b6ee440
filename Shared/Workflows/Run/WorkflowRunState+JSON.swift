import BuzzKitWire
import Foundation

/// Why a stored run state could not be read back.
public struct WorkflowStateError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension WorkflowRunState {
    /// The state as a JSON object (for a jsonb column); `init(json:)` reads it back equal. The
    /// document `jsonBytes` writes, read back: one writer for both.
    public var jsonValue: JSONValue { JSONValue.written(jsonBytes) }

    public init(json: JSONValue) throws(WorkflowStateError) {
        let r = StateReader(json, "state")
        guard try r.int("format") == Int64(Self.format) else { throw WorkflowStateError("state: unknown format") }
        let status = try r.enumeration("status", WorkflowRunStatus.self)
        self.init(
            runId: try r.string("runId"), workflowKey: try r.string("workflowKey"), version: Int(try r.int("version")),
            trigger: try WorkflowEvent(stateJSON: try r.value("trigger")),
            subscriber: try WorkflowSubscriber(stateJSON: try r.value("subscriber")),
            startedAt: try r.date("startedAt"))
        self.status = status
        if let f = r.optional("failure") {
            let fr = StateReader(f, "state.failure")
            failure = WorkflowRunFailure(
                code: try fr.enumeration("code", WorkflowRunFailure.Code.self), message: try fr.string("message"))
        }
        cancelReason = try r.optionalString("cancelReason")
        endedAt = try r.optionalDate("endedAt")
        current = try r.optionalString("current")
        if let t = r.optional("timer") {
            let tr = StateReader(t, "state.timer")
            timer = WorkflowTimer(token: try tr.string("token"), dueAt: try tr.date("dueAt"))
        }
        if let a = r.optional("awaiting") {
            let ar = StateReader(a, "state.awaiting")
            awaiting = WorkflowEventWait(
                step: try ar.string("step"), event: try ar.string("event"), since: try ar.date("since"),
                timeoutAt: try ar.date("timeoutAt"))
        }
        if let ids = r.optional("receiptsFor") {
            guard case .array(let items) = ids else { throw WorkflowStateError("state.receiptsFor: not an array") }
            receiptsFor = items.compactMap(\.stringValue)
        }
        if let p = r.optional("localPlan") {
            let pr = StateReader(p, "state.localPlan")
            localPlan = WorkflowLocalPlanState(
                step: try pr.string("step"), localId: try pr.string("localId"), messageId: try pr.string("messageId"),
                fireAt: try pr.date("fireAt"), content: try pr.value("content"),
                missing: pr.optional("missing")?.arrayValue?.compactMap(\.stringValue) ?? [],
                acknowledged: pr.optional("acknowledged")?.boolValue ?? false)
        }
        acknowledgementFor = try r.optionalString("acknowledgementFor")
        if let d = r.optional("digest") { digest = try WorkflowDigestState(json: d) }
        throttleFor = try r.optionalString("throttleFor")
        throttleReason = try r.optionalString("throttleReason")
        guard case .array(let items) = try r.value("outcomes") else {
            throw WorkflowStateError("state.outcomes: not an array")
        }
        var outcomes: [WorkflowStepOutcome] = []
        for item in items {
            let outcome: WorkflowStepOutcome = try WorkflowStepOutcome(json: item)
            outcomes.append(outcome)
        }
        self.outcomes = outcomes
    }
}

extension WorkflowStepOutcome {
    /// The outcome as the run state stores it (`write(to:)`'s document).
    public var jsonValue: JSONValue {
        var w = JSONWriter(capacity: 256)
        write(to: &w)
        return JSONValue.written(w.bytes)
    }

    init(json: JSONValue) throws(WorkflowStateError) {
        let r = StateReader(json, "outcome")
        self.init(
            step: try r.string("step"), kind: try r.enumeration("kind", WorkflowStepKind.Name.self),
            startedAt: try r.date("startedAt"))
        status = try r.enumeration("status", Status.self)
        dueAt = try r.optionalDate("dueAt")
        endedAt = try r.optionalDate("endedAt")
        if r.optional("decision") != nil { decision = try r.enumeration("decision", WorkflowStepDecision.self) }
        reason = try r.optionalString("reason")
        messageIds = r.optional("messageIds")?.arrayValue?.compactMap(\.stringValue) ?? []
        missing = r.optional("missing")?.arrayValue?.compactMap(\.stringValue) ?? []
        if let e = r.optional("event") { event = try WorkflowEvent(stateJSON: e) }
        shiftedFrom = try r.optionalDate("shiftedFrom")
        if let text = try r.optionalString("suppressed") {
            guard let reason = SuppressionReason(rawValue: text) else {
                throw WorkflowStateError("outcome.suppressed: unknown reason \(text)")
            }
            suppressed = reason
        }
        if let rc = r.optional("receipts")?.objectValue {
            receipts = rc.mapValues {
                WorkflowReceipts(
                    delivered: $0["delivered"]?.boolValue ?? false, opened: $0["opened"]?.boolValue ?? false)
            }
        }
    }
}

extension WorkflowDigestState {
    init(json: JSONValue) throws(WorkflowStateError) {
        let r = StateReader(json, "state.digest")
        self.init(
            step: try r.string("step"), key: try r.string("key"), closesAt: try r.date("closesAt"),
            collecting: r.optional("collecting")?.boolValue ?? false)
        if let s = r.optional("summary") {
            let sr = StateReader(s, "state.digest.summary")
            summary = WorkflowDigestSummary(
                count: Int(try sr.int("count")), first: try WorkflowEvent(stateJSON: try sr.value("first")),
                last: try WorkflowEvent(stateJSON: try sr.value("last")),
                values: sr.optional("values")?.arrayValue?.compactMap(\.stringValue) ?? [],
                distinctValues: Int(try sr.int("distinctValues")))
        }
    }
}

extension WorkflowEvent {
    /// An event as run states, pending runs and inboxes store it (`jsonValue` / `jsonText`).
    public init(stateJSON json: JSONValue) throws(WorkflowStateError) {
        let r = StateReader(json, "event")
        self.init(
            id: try r.string("id"), name: try r.string("name"), data: r.optional("data") ?? [:],
            occurredAt: try r.date("occurredAt"))
    }
}

extension WorkflowSubscriber {
    init(stateJSON json: JSONValue) throws(WorkflowStateError) {
        let r = StateReader(json, "subscriber")
        self.init(
            id: try r.string("id"), attributes: r.optional("attributes") ?? [:],
            timezone: try r.optionalString("timezone"), locale: try r.optionalString("locale"))
    }
}

/// Typed member access with errors that name the member.
private struct StateReader {
    let object: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, _ path: String) {
        object = value.objectValue ?? [:]
        self.path = path
    }

    func value(_ key: String) throws(WorkflowStateError) -> JSONValue {
        guard let v = object[key], !v.isNull else { throw WorkflowStateError("\(path).\(key): missing") }
        return v
    }

    func optional(_ key: String) -> JSONValue? {
        guard let v = object[key], !v.isNull else { return nil }
        return v
    }

    func string(_ key: String) throws(WorkflowStateError) -> String {
        guard let s = try value(key).stringValue else { throw WorkflowStateError("\(path).\(key): not a string") }
        return s
    }

    /// A member that holds one of a vocabulary's values.
    func enumeration<E: RawRepresentable>(_ key: String, _ type: E.Type) throws(WorkflowStateError) -> E
    where E.RawValue == String {
        guard let value = E(rawValue: try string(key)) else { throw WorkflowStateError("\(path).\(key): unknown") }
        return value
    }

    func optionalString(_ key: String) throws(WorkflowStateError) -> String? {
        guard let v = optional(key) else { return nil }
        guard let s = v.stringValue else { throw WorkflowStateError("\(path).\(key): not a string") }
        return s
    }

    func int(_ key: String) throws(WorkflowStateError) -> Int64 {
        guard let i = try value(key).intValue else { throw WorkflowStateError("\(path).\(key): not an integer") }
        return i
    }

    func date(_ key: String) throws(WorkflowStateError) -> Date {
        guard let d = EventTimestamp.parse(try string(key)) else {
            throw WorkflowStateError("\(path).\(key): not a date-time")
        }
        return d
    }

    func optionalDate(_ key: String) throws(WorkflowStateError) -> Date? {
        guard optional(key) != nil else { return nil }
        return try date(key)
    }
}
