import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows

/// JSON schemas of the run routes, for the OpenAPI document: what `WorkflowRunRecord.jsonValue`
/// and the trigger and cancel routes answer.
enum WorkflowRunSchemas {
    static let triggerRules = [
        "to is the id of one of the tenant's subscribers (else 404 not_found, details at path to)",
        "the workflow is enabled (else 409 workflow_disabled)"
    ]

    static let triggerRequest = WorkflowSchemas.withRules(
        Schema.object(
            [
                "to": Schema.string(FieldRules.identifierRule, "The subscriber the run is for"),
                "data": Schema.nullable(
                    Schema.adding(
                        ["description": "The trigger event's data (trigger.data in the definition)"],
                        to: Schema.anyObject))
            ], required: ["to"]), triggerRules)

    /// `?subscriberId=`: empty is every subscriber.
    static let subscriberFilter: JSONValue = [
        "anyOf": [["type": "string", "maxLength": 0], Schema.string(FieldRules.identifierRule)]
    ]

    static let triggered = Schema.object(
        [
            "runId": Schema.uuid, "workflowKey": Schema.string(), "version": Schema.integer,
            "subscriberId": Schema.string(),
            "created": ["type": "boolean", "description": "false when a run with this Idempotency-Key existed (its id)"]
        ], required: ["runId", "workflowKey", "version", "subscriberId", "created"])

    static let event = Schema.object(
        [
            "id": Schema.string(), "name": Schema.string(), "data": ["description": "The event's data"],
            "occurredAt": Schema.timestamp
        ], required: ["id", "name", "data", "occurredAt"])

    static let stepOutcome = Schema.object(
        [
            "step": Schema.string(),
            "kind": Schema.string(enumeration: WorkflowStepKind.names),
            "status": Schema.string(
                "running: begun, not over; done; interrupted: ended by the run's cancellation or failure",
                enumeration: WorkflowStepOutcome.Status.allCases.map(\.rawValue)),
            "startedAt": Schema.timestamp,
            "dueAt": Schema.adding(
                [
                    "description":
                        "When the step goes on: a wait's end, a waitFor's timeout, a send moved out of quiet hours"
                ],
                to: Schema.timestamp),
            "endedAt": Schema.timestamp,
            "decision": Schema.string(
                "waited; matched / timed_out; then / else; sent / suppressed (the send policy held it back); scheduled_on_device / fallback_sent; exited; collected / joined (digest); passed / throttled (throttle); cancelled; failed",
                enumeration: WorkflowStepDecision.allCases.map(\.rawValue)),
            "reason": Schema.string(
                "Why, in words: the zone a time was read in, the branch condition's value, a quiet-hours shift"),
            "messageIds": Schema.array(Schema.string("A message the step sent (GET /v1/messages/{id})")),
            "missing": Schema.array(Schema.string("A template path that had no value (rendered empty)")),
            "event": event,
            "shiftedFrom": Schema.adding(
                ["description": "A send moved out of quiet hours: when it was due before"], to: Schema.timestamp),
            "suppressed": Schema.string(
                "A send the policy held back: why (its message's deliveries are suppressed with it)",
                enumeration: SuppressionReason.allCases.map(\.rawValue)),
            "receipts": Schema.map(
                Schema.object(
                    ["delivered": Schema.boolean, "opened": Schema.boolean], required: ["delivered", "opened"]),
                description: "The receipts a branch decided on, by message id")
        ], required: ["step", "kind", "status", "startedAt", "messageIds"])

    /// A digest run's window and what it collected (issue 28).
    static let digest = Schema.object(
        [
            "step": Schema.string(), "key": Schema.string("The rendered key (empty: the subscriber alone)"),
            "closesAt": Schema.timestamp,
            "closed": Schema.boolean,
            "count": Schema.nullable(
                Schema.adding(
                    [
                        "description":
                            "Events collected, the trigger included (so far while open, when read with GET /v1/workflow-runs/{id})"
                    ], to: Schema.integer)),
            "list": Schema.nullable(Schema.string("{{ digest.list }} as rendered: Ana, Ben and 3 others")),
            "events": Schema.adding(
                [
                    "description":
                        "The events it collected, in order of arrival (the first 1000; GET /v1/workflow-runs/{id} only)"
                ],
                to: Schema.array(
                    Schema.object(
                        ["id": Schema.string(), "occurredAt": Schema.timestamp, "joinedAt": Schema.timestamp],
                        required: ["id", "occurredAt", "joinedAt"])))
        ], required: ["step", "key", "closesAt", "closed", "count", "list"])

    static let run = Schema.object(
        [
            "id": Schema.uuid, "workflowKey": Schema.string(), "version": Schema.integer,
            "subscriberId": Schema.string(),
            "status": Schema.string(
                "running (started, or accepted and about to start), completed, cancelled, failed, throttled",
                enumeration: WorkflowRunRoutes.runStatuses),
            "failure": Schema.nullable(
                Schema.object(
                    [
                        "code": Schema.string(enumeration: WorkflowRunFailure.Code.allCases.map(\.rawValue)),
                        "message": Schema.string()
                    ], required: ["code", "message"])),
            "cancelReason": Schema.nullable(Schema.string()),
            "throttleReason": Schema.nullable(Schema.string("Why a throttle stopped the run (status throttled)")),
            "digest": Schema.nullable(digest),
            "trigger": Schema.nullable(event),
            "current": Schema.nullable(Schema.string("The step the run is at")),
            "createdAt": Schema.timestamp, "startedAt": Schema.nullable(Schema.timestamp),
            "endedAt": Schema.nullable(Schema.timestamp),
            "dueAt": Schema.nullable(
                Schema.adding(["description": "When the run's timer fires"], to: Schema.timestamp)),
            "steps": Schema.array(stepOutcome)
        ],
        required: [
            "id", "workflowKey", "version", "subscriberId", "status", "failure", "cancelReason", "throttleReason",
            "digest", "trigger", "current",
            "createdAt", "startedAt", "endedAt", "dueAt", "steps"
        ])

    static let cancelled = Schema.object(
        [
            "run": run,
            "cancel": Schema.string(
                "requested: a workflow replica cancels the run shortly; already_ended: it had ended, nothing changed",
                enumeration: WorkflowRunStore.CancelRequest.answered.map(\.rawValue))
        ], required: ["run", "cancel"])
}
