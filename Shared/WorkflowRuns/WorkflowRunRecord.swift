import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// One stored run, as `GET /v1/workflow-runs/{id}` and the runs list show it. `state` is the
/// engine's state (nil while the run is `pending`: accepted by the trigger route, not yet
/// started by a workflow replica).
public struct WorkflowRunRecord: Sendable, Hashable {
    public var id: UUID
    public var tenantId: UUID
    public var workflowKey: String
    public var version: Int
    public var subscriberId: String
    /// The dedupe key: the trigger event's id, or `api:<key>` for the trigger route.
    public var triggerKey: String
    /// `pending` until a workflow replica started it, then the state's status.
    public var status: WorkflowRunStatus
    public var failureCode: WorkflowRunFailure.Code?
    public var state: WorkflowRunState?
    /// While pending: the trigger event the run will start with.
    public var pendingTrigger: WorkflowEvent?
    /// The run's one timer's due time (nil: none).
    public var dueAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    public var startedAt: Date?
    public var endedAt: Date?
    /// A digest run's collected events (ids and times, in order of arrival) and how many, when
    /// read with the run (`WorkflowRunStore.run`; lists leave them out).
    public var digestEvents: WorkflowDigestEvents?

    /// The API view: id, workflowKey, version, subscriberId, status, failure (code, message),
    /// cancelReason, throttleReason, digest (a digest run's key, window and what it collected),
    /// trigger, createdAt, startedAt, endedAt, current step, dueAt, and `steps`
    /// (each step's outcome: step, kind, status, startedAt, dueAt, endedAt, decision, reason,
    /// messageIds, missing, event, shiftedFrom, receipts).
    public var jsonValue: JSONValue {
        var o: [String: JSONValue] = [
            "id": .string(id.lowercasedText), "workflowKey": .string(workflowKey), "version": .int(Int64(version)),
            "subscriberId": .string(subscriberId), "status": .string(status.shown.rawValue),
            "createdAt": .string(WorkflowTime.text(createdAt)),
            "startedAt": startedAt.map { .string(WorkflowTime.text($0)) } ?? .null,
            "endedAt": endedAt.map { .string(WorkflowTime.text($0)) } ?? .null,
            "dueAt": dueAt.map { .string(WorkflowTime.text($0)) } ?? .null,
            "failure": .null, "cancelReason": .null, "throttleReason": .null, "digest": .null, "current": .null,
            "steps": []
        ]
        if let state {
            o["trigger"] = state.trigger.jsonValue
            if let failure = state.failure {
                o["failure"] = ["code": .string(failure.code.rawValue), "message": .string(failure.message)]
            }
            if let reason = state.cancelReason { o["cancelReason"] = .string(reason) }
            if let reason = state.throttleReason { o["throttleReason"] = .string(reason) }
            if let digest = state.digest { o["digest"] = digestJSON(digest) }
            if let current = state.current { o["current"] = .string(current) }
            o["steps"] = .array(state.outcomes.map(\.jsonValue))
        } else {
            o["trigger"] = pendingTrigger.map(\.jsonValue) ?? .null
            if let failureCode {
                o["failure"] = ["code": .string(failureCode.rawValue), "message": .string(failureCode.rawValue)]
            }
        }
        return .object(o)
    }

    /// `{step, key, closesAt, closed, count, list, first, last, events?}`: `count` is what the
    /// window collected once closed, else the events so far (when they were read with the run).
    private func digestJSON(_ digest: WorkflowDigestState) -> JSONValue {
        var o: [String: JSONValue] = [
            "step": .string(digest.step), "key": .string(digest.key),
            "closesAt": .string(WorkflowTime.text(digest.closesAt)), "closed": .bool(digest.summary != nil),
            "count": .null, "list": .null
        ]
        if let summary = digest.summary {
            o["count"] = .int(Int64(summary.count))
            o["list"] = summary.listText.map(JSONValue.string) ?? .null
        } else if let digestEvents {
            o["count"] = .int(Int64(digestEvents.count))
        }
        if let digestEvents { o["events"] = .array(digestEvents.events.map(\.jsonValue)) }
        return .object(o)
    }

    /// The columns `WorkflowRunRecord.decode` reads, in its order.
    static let columns = """
        id, tenant_id, workflow_key, version, subscriber_id, trigger_key, status, failure_code, state, start_input, \
        timer_due_at, created_at, updated_at, started_at, ended_at
        """

    static func decode(_ row: PostgresRow) throws -> WorkflowRunRecord {
        let stateJSON = try row.decode(JSONValue?.self, at: 8)
        let startInput = try row.decode(JSONValue?.self, at: 9)
        return WorkflowRunRecord(
            id: try row.decode(UUID.self, at: 0), tenantId: try row.decode(UUID.self, at: 1),
            workflowKey: try row.decode(String.self, at: 2), version: try row.decode(Int.self, at: 3),
            subscriberId: try row.decode(String.self, at: 4), triggerKey: try row.decode(String.self, at: 5),
            status: try decodeVocabulary(row.decode(String.self, at: 6), "status"),
            failureCode: try row.decode(String?.self, at: 7).map { try decodeVocabulary($0, "failure_code") },
            state: try stateJSON.map { try WorkflowRunState(json: $0) },
            pendingTrigger: startInput?["trigger"].flatMap { try? WorkflowEvent(stateJSON: $0) },
            dueAt: try row.decode(Date?.self, at: 10), createdAt: try row.decode(Date.self, at: 11),
            updatedAt: try row.decode(Date.self, at: 12), startedAt: try row.decode(Date?.self, at: 13),
            endedAt: try row.decode(Date?.self, at: 14))
    }
}

/// A value of a vocabulary column; a value outside it is a row this version cannot read.
func decodeVocabulary<E: RawRepresentable>(_ text: String, _ column: String) throws -> E where E.RawValue == String {
    guard let value = E(rawValue: text) else {
        throw WorkflowStateError("workflow_runs.\(column): unknown value \(text)")
    }
    return value
}

/// A page of runs, newest first; `next` continues after the last one (nil: no more).
public struct WorkflowRunPage: Sendable, Hashable {
    public var runs: [WorkflowRunRecord]
    public var next: WorkflowRunCursor?
}

/// Where a runs list goes on: after the run created at `createdAt` with id `id` (keyset on
/// `(created_at, id)` descending). `text` is opaque for the API (`<µs>_<uuid>`).
public struct WorkflowRunCursor: Sendable, Hashable {
    public var createdAtMicroseconds: Int64
    public var id: UUID

    public init(createdAt: Date, id: UUID) {
        createdAtMicroseconds = EventTimestamp.microseconds(createdAt)
        self.id = id
    }

    public var text: String { "\(createdAtMicroseconds)_\(id.lowercasedText)" }

    /// nil for text that is not a cursor.
    public init?(text: String) {
        let parts = text.split(separator: "_", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let micros = Int64(parts[0]), micros >= 0, let id = UUID(uuidText: String(parts[1]))
        else {
            return nil
        }
        createdAtMicroseconds = micros
        self.id = id
    }

    var createdAt: Date { Date(timeIntervalSince1970: Double(createdAtMicroseconds) / 1_000_000) }
}
