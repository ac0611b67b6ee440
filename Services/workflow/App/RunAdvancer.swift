import BuzzKitContracts
import BuzzKitCrypto
import BuzzKitLedger
import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation

/// Carries the engine's actions out for one run inside the caller's transaction: answers
/// `askReceipts`, `askAcknowledgement` and a beginning `waitFor`'s look back at once (more
/// advances), and gathers the message rows of its sends and of its local windows' plans and
/// cancels (silent pushes, kinds `local_plan` / `local_cancel`). The caller commits the final
/// state, its timer and the messages together, then publishes.
struct RunAdvancer {
    let tenantId: UUID
    let runId: UUID
    let definition: WorkflowDefinition
    let environment: WorkflowEnvironment
    let connection: PostgresConnection
    /// Acknowledgements already looked up for this run's plan (by local id), for the whole claim
    /// in one statement: `askAcknowledgement` reads them instead of asking again.
    var acknowledgements: [String: Bool] = [:]
    /// The events of this run's digest, when the claim already closed its window with others'
    /// (`collectDigest` reads them instead of closing it alone).
    var digestEvents: [WorkflowEvent]?
    /// What the send policy decides for this tenant's pushes naming no category to `subscriber`
    /// (the run's), read once for the whole claim (`Policy.uncategorized`): such a send step then
    /// needs no decision statement of its own. Nil: every send step is decided by `Policy.decide`.
    var uncategorized: (policy: UncategorizedPolicy, subscriber: String)?

    /// What one run's advances produced.
    struct Result {
        var state: WorkflowRunState
        var messages: [WorkflowMessageInsert] = []
        /// Whether anything changed (nothing to write otherwise, beyond consumed inputs).
        var changed = false
        var started = false
        var timersFired = 0
        var lateness: [Double] = []
    }

    /// The message id of a step's send: name-based on run id, step and purpose, so a step
    /// executed again (after a crash before its commit) names the same message and the ledger's
    /// primary key refuses the second. A run with a time-ordered id (every run since migration
    /// 0027) gives its sends time-ordered ids with the run's time: the ledger files them in the
    /// run's week, the same week every time (docs/data-lifecycle.md, "Retention").
    static func messageId(runId: String, step: String, purpose: WorkflowMessagePurpose) -> String {
        let name = "buzzkit.workflow:\(runId):\(step):\(purpose.rawValue)"
        if let runTime = UUID(uuidText: runId)?.timeOrderedDate {
            return UUID.timeOrdered(at: runTime, name: name).lowercasedText
        }
        return UUID.nameBased(name).lowercasedText
    }

    /// Applies `advance` (from start or an input) and everything it leads to.
    func apply(_ advance: WorkflowAdvance, to result: inout Result) async throws {
        guard advance.changed else { return }
        result.changed = true
        result.state = advance.state
        var followUps: [WorkflowInput] = []
        for action in advance.actions {
            switch action {
            case .scheduleTimer, .clearTimer, .stopAwaitingEvent, .finished:
                break  // the state carries the timer, the awaited event and the status
            case .send(let send):
                guard let id = UUID(uuidText: send.messageId) else { continue }
                var row = message(
                    id: id, subscriberId: send.subscriberId, kind: .push, content: send.contentJSON,
                    step: send.step, state: result.state)
                let suppressed = try await decidePolicy(send, messageId: id)
                row.policyDecidedAt = environment.now
                row.suppressedReason = suppressed
                result.state = WorkflowEngine.recordPolicy(
                    result.state, messageId: send.messageId, suppressed: suppressed)
                result.messages.append(row)
            case .askReceipts(_, let messageIds):
                let receipts = try await WorkflowRunStore.receipts(
                    on: connection, tenantId: tenantId,
                    subscriberId: result.state.subscriber.id, messageIds: messageIds)
                followUps.append(.receipts(receipts))
            case .awaitEvent(let wait):
                let events = try await WorkflowRunStore.events(
                    on: connection, tenantId: tenantId,
                    subscriberId: result.state.subscriber.id, name: wait.event,
                    since: wait.since)
                followUps += events.map { .event($0) }
            case .sendLocalPlan(let local):
                // The plan goes to every active device now, as a silent push (`bk.local`).
                guard let id = UUID(uuidText: local.messageId) else { continue }
                result.messages.append(
                    message(
                        id: id, subscriberId: local.subscriberId, kind: .localPlan,
                        content: ["local": local.plan.jsonValue], step: local.step, state: result.state))
            case .sendCancelPlan(let cancel):
                // Cancelled centrally before the plan fired: `bk.cancel` removes it on the devices.
                guard let id = UUID(uuidText: cancel.messageId) else { continue }
                result.messages.append(
                    message(
                        id: id, subscriberId: cancel.subscriberId, kind: .localCancel,
                        content: ["cancel": ["runId": .string(cancel.runId)]], step: cancel.step,
                        state: result.state))
            case .collectDigest(let collect):
                var events = digestEvents
                if events == nil {
                    let close = WorkflowDigestClose(
                        runId: runId, tenantId: tenantId, workflowKey: result.state.workflowKey,
                        subscriberId: result.state.subscriber.id, key: collect.key)
                    events = try await WorkflowRunStore.closeDigests(on: connection, [close])[runId]
                }
                var collector = WorkflowDigestCollector(list: definition.digest?.digest.list)
                for event in events ?? [] { collector.add(event) }
                // The trigger is always among them (written with the run); alone if they were lost.
                let summary =
                    collector.summary
                    ?? WorkflowDigestSummary(count: 1, first: result.state.trigger, last: result.state.trigger)
                followUps.append(.digestCollected(summary))
            case .askThrottle(let check):
                let answer = try await WorkflowRunStore.throttle(
                    on: connection, tenantId: tenantId, workflowKey: result.state.workflowKey,
                    subscriberId: result.state.subscriber.id, check: check, now: environment.now)
                followUps.append(.throttle(answer))
            case .askAcknowledgement(_, let localId):
                var acknowledged = acknowledgements[localId]
                if acknowledged == nil {
                    acknowledged = try await WorkflowRunStore.localScheduled(
                        on: connection, tenantId: tenantId, subscriberId: result.state.subscriber.id, localId: localId)
                }
                followUps.append(.acknowledgement(localId: localId, acknowledged: acknowledged ?? false))
            }
        }
        for input in followUps where result.state.status == .running {
            let next = WorkflowEngine.advance(
                result.state, definition: definition, input: input, environment: environment)
            try await apply(next, to: &result)
        }
    }

    /// The send policy for a push of this run, decided (and counted against the caps) in the
    /// caller's transaction, so the counters and the message row commit or roll back together;
    /// apns-sender applies it to every device and does not decide again. A step the engine
    /// decided already (`policy: "drop"` in quiet hours) is not asked about: nothing is counted.
    /// A step redone after a crash names the same message, which the counters let through again.
    private func decidePolicy(_ send: WorkflowSendAction, messageId: UUID) async throws -> SuppressionReason? {
        if let decided = send.suppressed { return decided }
        let candidate = PolicyCandidate(
            messageId: messageId, subscriberId: send.subscriberId, category: send.content.category)
        let known = uncategorized.flatMap { $0.subscriber == send.subscriberId ? $0.policy : nil }
        let verdicts = try await Policy.decide(
            [candidate], tenant: tenantId, now: environment.now, on: connection, uncategorized: known)
        return verdicts[candidate]?.suppressed
    }

    /// A message row of this run's (`kind` decides how the sender builds the push).
    private func message(
        id: UUID, subscriberId: String, kind: MessageKind, content: JSONValue, step: String, state: WorkflowRunState
    ) -> WorkflowMessageInsert {
        WorkflowMessageInsert(
            id: id, tenantId: tenantId, subscriberId: subscriberId, kind: kind, content: content,
            workflowKey: state.workflowKey, version: state.version, runId: runId, step: step)
    }

    /// `state` ended as failed with `code` (its running step interrupted, its timer and wait dropped).
    static func failed(
        _ state: WorkflowRunState, code: WorkflowRunFailure.Code, message: String, at now: Date
    ) -> WorkflowRunState {
        var state = state
        guard state.status == .running else { return state }
        state.status = .failed
        state.failure = WorkflowRunFailure(code: code, message: message)
        state.endedAt = now
        state.timer = nil
        state.awaiting = nil
        state.receiptsFor = nil
        state.throttleFor = nil
        for i in state.outcomes.indices where state.outcomes[i].status == .running {
            state.outcomes[i].status = .interrupted
            state.outcomes[i].endedAt = now
            state.outcomes[i].decision = .failed
        }
        return state
    }
}
