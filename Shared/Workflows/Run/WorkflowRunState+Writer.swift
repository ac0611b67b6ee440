import BuzzKitWire
import Foundation

/// The run state's document written straight to bytes, without building a `JSONValue` tree of
/// dictionaries and sorting every object's keys: the workflow service writes one per run it
/// starts or advances, and the tree cost more than the engine's walk. The one writer of the
/// document (`jsonValue` reads these bytes back). Members come in a fixed order, not sorted:
/// the jsonb column keeps its own order anyway.
extension WorkflowRunState {
    /// The state as compact JSON text (for the jsonb column).
    public var jsonText: String { String(decoding: jsonBytes, as: UTF8.self) }

    public var jsonBytes: [UInt8] {
        var w = JSONWriter(capacity: 1024)
        write(to: &w)
        return w.bytes
    }

    func write(to w: inout JSONWriter) {
        var first = true
        w.raw("{")
        w.key("format", first: &first)
        w.int(Self.format)
        w.key("runId", first: &first)
        w.string(runId)
        w.key("workflowKey", first: &first)
        w.string(workflowKey)
        w.key("version", first: &first)
        w.int(version)
        w.key("status", first: &first)
        w.string(status.rawValue)
        w.key("trigger", first: &first)
        trigger.writeState(to: &w)
        w.key("subscriber", first: &first)
        subscriber.writeDocument(to: &w)
        w.key("startedAt", first: &first)
        w.date(startedAt)
        w.key("outcomes", first: &first)
        w.raw("[")
        for (i, outcome) in outcomes.enumerated() {
            if i > 0 { w.raw(",") }
            outcome.write(to: &w)
        }
        w.raw("]")
        if let failure {
            w.key("failure", first: &first)
            var f = true
            w.raw("{")
            w.key("code", first: &f)
            w.string(failure.code.rawValue)
            w.key("message", first: &f)
            w.string(failure.message)
            w.raw("}")
        }
        if let cancelReason {
            w.key("cancelReason", first: &first)
            w.string(cancelReason)
        }
        if let endedAt {
            w.key("endedAt", first: &first)
            w.date(endedAt)
        }
        if let current {
            w.key("current", first: &first)
            w.string(current)
        }
        if let timer {
            w.key("timer", first: &first)
            var t = true
            w.raw("{")
            w.key("token", first: &t)
            w.string(timer.token)
            w.key("dueAt", first: &t)
            w.date(timer.dueAt)
            w.raw("}")
        }
        if let awaiting {
            w.key("awaiting", first: &first)
            var a = true
            w.raw("{")
            w.key("step", first: &a)
            w.string(awaiting.step)
            w.key("event", first: &a)
            w.string(awaiting.event)
            w.key("since", first: &a)
            w.date(awaiting.since)
            w.key("timeoutAt", first: &a)
            w.date(awaiting.timeoutAt)
            w.raw("}")
        }
        if let receiptsFor {
            w.key("receiptsFor", first: &first)
            w.strings(receiptsFor)
        }
        if let localPlan {
            w.key("localPlan", first: &first)
            var p = true
            w.raw("{")
            w.key("step", first: &p)
            w.string(localPlan.step)
            w.key("localId", first: &p)
            w.string(localPlan.localId)
            w.key("messageId", first: &p)
            w.string(localPlan.messageId)
            w.key("fireAt", first: &p)
            w.date(localPlan.fireAt)
            w.key("content", first: &p)
            w.value(localPlan.content)
            w.key("missing", first: &p)
            w.strings(localPlan.missing)
            w.key("acknowledged", first: &p)
            w.bool(localPlan.acknowledged)
            w.raw("}")
        }
        if let acknowledgementFor {
            w.key("acknowledgementFor", first: &first)
            w.string(acknowledgementFor)
        }
        if let digest {
            w.key("digest", first: &first)
            digest.write(to: &w)
        }
        if let throttleFor {
            w.key("throttleFor", first: &first)
            w.string(throttleFor)
        }
        if let throttleReason {
            w.key("throttleReason", first: &first)
            w.string(throttleReason)
        }
        w.raw("}")
    }
}

extension WorkflowDigestState {
    func write(to w: inout JSONWriter) {
        var first = true
        w.raw("{")
        w.key("step", first: &first)
        w.string(step)
        w.key("key", first: &first)
        w.string(key)
        w.key("closesAt", first: &first)
        w.date(closesAt)
        w.key("collecting", first: &first)
        w.bool(collecting)
        if let summary {
            w.key("summary", first: &first)
            var s = true
            w.raw("{")
            w.key("count", first: &s)
            w.int(summary.count)
            w.key("first", first: &s)
            summary.first.writeState(to: &w)
            w.key("last", first: &s)
            summary.last.writeState(to: &w)
            w.key("values", first: &s)
            w.strings(summary.values)
            w.key("distinctValues", first: &s)
            w.int(summary.distinctValues)
            w.raw("}")
        }
        w.raw("}")
    }
}

extension WorkflowStepOutcome {
    func write(to w: inout JSONWriter) {
        var first = true
        w.raw("{")
        w.key("step", first: &first)
        w.string(step)
        w.key("kind", first: &first)
        w.string(kind.rawValue)
        w.key("status", first: &first)
        w.string(status.rawValue)
        w.key("startedAt", first: &first)
        w.date(startedAt)
        w.key("messageIds", first: &first)
        w.strings(messageIds)
        if let dueAt {
            w.key("dueAt", first: &first)
            w.date(dueAt)
        }
        if let endedAt {
            w.key("endedAt", first: &first)
            w.date(endedAt)
        }
        if let decision {
            w.key("decision", first: &first)
            w.string(decision.rawValue)
        }
        if let reason {
            w.key("reason", first: &first)
            w.string(reason)
        }
        if !missing.isEmpty {
            w.key("missing", first: &first)
            w.strings(missing)
        }
        if let event {
            w.key("event", first: &first)
            event.writeState(to: &w)
        }
        if let shiftedFrom {
            w.key("shiftedFrom", first: &first)
            w.date(shiftedFrom)
        }
        if let suppressed {
            w.key("suppressed", first: &first)
            w.string(suppressed.rawValue)
        }
        if let receipts {
            w.key("receipts", first: &first)
            w.raw("{")
            for (i, (id, r)) in receipts.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { w.raw(",") }
                w.string(id)
                w.raw(":{\"delivered\":")
                w.bool(r.delivered)
                w.raw(",\"opened\":")
                w.bool(r.opened)
                w.raw("}")
            }
            w.raw("}")
        }
        w.raw("}")
    }
}

extension WorkflowEvent {
    /// `{"id", "name", "data", "occurredAt"}` as compact JSON text: how run states and the
    /// runtime's inboxes store an event.
    public var jsonText: String {
        var w = JSONWriter(capacity: 256)
        writeState(to: &w)
        return w.string
    }

    /// The same document as a `JSONValue` (a pending run's trigger, an inbox input's payload).
    public var jsonValue: JSONValue {
        var w = JSONWriter(capacity: 256)
        writeState(to: &w)
        return JSONValue.written(w.bytes)
    }

    /// The event as run states and inboxes store it.
    func writeState(to w: inout JSONWriter) {
        var first = true
        w.raw("{")
        w.key("id", first: &first)
        w.string(id)
        w.key("name", first: &first)
        w.string(name)
        w.key("data", first: &first)
        w.value(data)
        w.key("occurredAt", first: &first)
        w.date(occurredAt)
        w.raw("}")
    }
}

extension WorkflowSubscriber {
    /// The subscriber as the run state stores it (the members `documentJSON` has).
    func writeDocument(to w: inout JSONWriter) {
        var first = true
        w.raw("{")
        w.key("id", first: &first)
        w.string(id)
        w.key("attributes", first: &first)
        w.value(attributes)
        if let timezone {
            w.key("timezone", first: &first)
            w.string(timezone)
        }
        if let locale {
            w.key("locale", first: &first)
            w.string(locale)
        }
        w.raw("}")
    }
}

extension JSONWriter {
    /// An instant as `WorkflowTime.text` writes it.
    fileprivate mutating func date(_ date: Date) {
        timestamp(microseconds: EventTimestamp.microseconds(date))
    }

    fileprivate mutating func strings(_ items: [String]) {
        raw("[")
        for (i, item) in items.enumerated() {
            if i > 0 { raw(",") }
            string(item)
        }
        raw("]")
    }
}

extension JSONValue {
    /// A document this module's writers produced, read back (they write valid JSON by
    /// construction, so a parse failure is a bug in a writer, not bad input).
    static func written(_ bytes: [UInt8]) -> JSONValue {
        do { return try JSONValue.parse(bytes) } catch {
            preconditionFailure("a run-state writer wrote invalid JSON: \(error)")
        }
    }
}
