import BuzzKitWire
import BuzzKitWorkflows

/// JSON schemas of workflow definitions and their answers, for the OpenAPI document. They accept
/// at least what `WorkflowDefinition.parse` accepts (the parser's rules are the stricter ones:
/// a definition the schema allows may still be refused with 422 and every problem's path).
enum WorkflowSchemas {
    static let durationPattern = "^[1-9][0-9]{0,10}[smhd]$"
    static let timePattern = "^([01][0-9]|2[0-3]):[0-5][0-9]$"
    static let expression = Schema.string(
        "An expression of the audience language over rooted paths (event., trigger., subscriber., steps.)",
        maxLength: 4096)
    static let eventName = Schema.string(maxLength: WorkflowLimits.maxEventNameBytes)

    /// The rules a definition must follow that JSON Schema cannot state (`x-rules`); a definition
    /// breaking one is answered 422 `validation_failed` with the member's path.
    static let definitionRules = [
        "step names are unique in the whole workflow (branches included)",
        "at most \(WorkflowLimits.maxSteps) steps in all, branches nested at most \(WorkflowLimits.maxBranchDepth) deep, conditions at most \(WorkflowLimits.maxConditionDepth)",
        "durations are at most 365 days",
        "waitUntil.timezone is \"subscriber\" or an IANA zone name (Europe/Berlin)",
        "where and if expressions are the audience language over rooted paths: trigger.where reads event., trigger., subscriber.; cancelOn and waitFor where also steps.; branch if reads trigger., subscriber., steps. (event.name, event.data.x, trigger.data.x, subscriber.id|timezone|locale|attributes.y, steps.<name>.outcome, steps.<name>.event.data.x); two paths may be compared",
        "a condition names only steps before it: opened and delivered a send step, matched a waitFor step, steps.<name>.event a waitFor step",
        "{{ path }} templates in send content read trigger. and subscriber. paths and are closed with }}",
        "send content follows POST /v1/messages's rules (something to show or carry, buttons need a title or body, unique button ids, URLs with a scheme, at most 4096 bytes of payload) where no template decides it",
        "a send with deliver: \"local\" comes directly after a waitUntil step in the same list",
        "a digest is the workflow's first step (at most one); digest and throttle windows are at most 30 days; their key is a {{ trigger.* }} template that parses; a digest's list is a path inside the trigger's data (data.<field>); a throttle's limit is 1 to \(WorkflowLimits.maxThrottleLimit)",
        "digest.count, digest.list, digest.first.data.x, digest.last.data.x are read (in send templates and branch if) only in a workflow with a digest step, digest.list only when it has a list",
        "event names are at most 128 bytes of UTF-8"
    ]

    /// What `PUT /v1/workflows/{key}` takes: any JSON object, read by `WorkflowDefinition.parse`.
    /// JSON Schema cannot state a definition's rules (unique names, conditions naming earlier
    /// steps, expressions, templates, content limits), so the document does not pretend to: the
    /// shape is `WorkflowDefinition` and the rules are `x-rules`, and the gateway answers any
    /// object that breaks one 422 `validation_failed` with every problem and its JSON path.
    static var definitionInput: JSONValue {
        withRules(
            [
                "type": "object", "additionalProperties": true,
                "description": .string(
                    """
                    A workflow definition: any JSON object is read, and one that is not a definition is answered 422 \
                    validation_failed listing every problem with its JSON path (steps[2].waitUntil.time). A definition has the \
                    shape of components.schemas.WorkflowDefinition (unknown members refused, a member given is never null, each \
                    step has a name and exactly one kind) and follows every rule of x-rules
                    """)
            ], definitionRules)
    }

    static func withRules(_ schema: JSONValue, _ rules: [String]) -> JSONValue {
        guard case .object(var o) = schema else { return schema }
        o["x-rules"] = .array(rules.map(JSONValue.string))
        return .object(o)
    }

    /// Named component schemas (`#/components/schemas/...`): steps and conditions nest.
    static var components: [String: JSONValue] {
        [
            "WorkflowEventRule": Schema.object(["event": eventName, "where": expression], required: ["event"]),
            "WorkflowDefinition": withRules(
                Schema.object(
                    [
                        "trigger": Schema.ref("WorkflowEventRule"),
                        "cancelOn": Schema.array(
                            Schema.ref("WorkflowEventRule"), maxItems: WorkflowLimits.maxCancelRules),
                        "steps": Schema.array(
                            Schema.ref("WorkflowStep"), minItems: 1, maxItems: WorkflowLimits.maxSteps),
                        "enabled": Schema.boolean
                    ], required: ["trigger", "steps"],
                    description: "A workflow: what starts a run, what cancels it, its named steps"),
                definitionRules),
            "WorkflowStep": step,
            "WorkflowCondition": condition
        ]
    }

    static var step: JSONValue {
        var o = Schema.object(
            [
                "name": Schema.string("Unique in the workflow", pattern: "^[A-Za-z0-9_.-]{1,64}$"),
                "wait": Schema.object(
                    ["duration": Schema.string("30s, 90m, 36h, 7d (at most 365 d)", pattern: durationPattern)],
                    required: ["duration"]),
                "waitUntil": Schema.object(
                    [
                        "time": Schema.string("Local wall-clock time HH:MM", pattern: timePattern),
                        "timezone": Schema.string(
                            "\"subscriber\" (their zone, else the tenant's default, else UTC) or an IANA zone",
                            maxLength: 64)
                    ], required: ["time"]),
                "waitFor": Schema.object(
                    [
                        "event": eventName, "where": expression,
                        "timeout": Schema.string("30s, 90m, 36h, 7d (at most 365 d)", pattern: durationPattern)
                    ], required: ["event", "timeout"]),
                "branch": Schema.object(
                    [
                        "if": Schema.ref("WorkflowCondition"),
                        "then": Schema.array(Schema.ref("WorkflowStep")),
                        "else": Schema.array(Schema.ref("WorkflowStep"))
                    ], required: ["if", "then"]),
                "send": send,
                "exit": ["type": "object", "maxProperties": 0, "additionalProperties": false],
                "digest": Schema.object(
                    [
                        "window": Schema.string(
                            "How long the first trigger event of a key waits for more (at most 30 d): 10m, 1h",
                            pattern: durationPattern),
                        "key": Schema.string(
                            "Template over the trigger event ({{ trigger.data.postId }}); without it, the subscriber is the key",
                            maxLength: WorkflowKeyTemplate.maxLength),
                        "list": Schema.string(
                            "data.<field> of the trigger events whose distinct values {{ digest.list }} writes (Ana, Ben and 3 others)",
                            pattern: "^data(\\.[A-Za-z0-9_-]{1,64}){1,8}$")
                    ], required: ["window"],
                    description:
                        "Many trigger events, one run: the first of a (workflow, subscriber, key) starts it and waits window; later ones join it until the window closes"
                ),
                "throttle": Schema.object(
                    [
                        "limit": [
                            "type": "integer", "minimum": 1, "maximum": .int(Int64(WorkflowLimits.maxThrottleLimit)),
                            "description": "Runs that may pass within the window"
                        ],
                        "window": Schema.string("Rolling window (at most 30 d): 1h, 1d", pattern: durationPattern),
                        "key": Schema.string(
                            "Template over the trigger event; without it, per subscriber",
                            maxLength: WorkflowKeyTemplate.maxLength)
                    ], required: ["limit", "window"],
                    description:
                        "At most limit runs of this workflow per subscriber (and key) pass within a rolling window; the others end throttled"
                )
            ], required: ["name"], description: "A named step with exactly one kind")
        if case .object(var members) = o {
            members["minProperties"] = 2
            members["maxProperties"] = 2
            o = .object(members)
        }
        return o
    }

    static var send: JSONValue {
        let text = Schema.string(
            "Text; {{ trigger.data.x }}, {{ subscriber.attributes.y }}, {{ subscriber.id }} are filled in per run",
            maxLength: 4096)
        return Schema.object([
            "deliver": Schema.string(
                "push (default) or local (directly after a waitUntil)", enumeration: ["push", "local"]),
            "policy": Schema.string("Quiet hours: respect (default) or ignore", enumeration: ["respect", "ignore"]),
            "title": text, "subtitle": text, "body": text, "deepLink": text, "image": text, "sound": text,
            "category": text, "threadId": text,
            "data": Schema.anyObject,
            "action": Schema.object(
                ["name": Schema.string(maxLength: 128), "data": Schema.anyObject], required: ["name"]),
            "actions": Schema.array(
                Schema.object(
                    [
                        "id": Schema.string(maxLength: 64), "title": Schema.string(maxLength: 4096),
                        "destructive": Schema.boolean,
                        "foreground": Schema.boolean, "input": Schema.boolean,
                        "placeholder": Schema.string(maxLength: 4096)
                    ], required: ["id", "title"]), maxItems: 4),
            "badge": ["type": "integer", "minimum": 0, "maximum": 2_147_483_647],
            "interruptionLevel": Schema.string(enumeration: ["passive", "active", "time-sensitive", "critical"]),
            "priority": [
                "oneOf": [Schema.string(enumeration: ["high", "normal"]), ["type": "integer", "enum": [10, 5]]]
            ]
        ])
    }

    static var condition: JSONValue {
        func single(_ key: String, _ value: JSONValue) -> JSONValue { Schema.object([key: value], required: [key]) }
        let stepName = Schema.string(pattern: "^[A-Za-z0-9_.-]{1,64}$")
        return [
            "description":
                "An expression string, or {opened|delivered: <send step>}, {matched: <waitFor step>}, {all|any: [...]}, {not: ...}",
            "oneOf": [
                expression, single("opened", stepName), single("delivered", stepName), single("matched", stepName),
                single("all", Schema.array(Schema.ref("WorkflowCondition"), minItems: 1)),
                single("any", Schema.array(Schema.ref("WorkflowCondition"), minItems: 1)),
                single("not", Schema.ref("WorkflowCondition"))
            ]
        ]
    }

    /// A workflow as lists and enable/disable answer it.
    static let summary = Schema.object(
        [
            "key": Schema.string(), "version": Schema.integer, "enabled": Schema.boolean,
            "triggerEvent": Schema.string(),
            "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp
        ], required: ["key", "version", "enabled", "triggerEvent", "createdAt", "updatedAt"])

    /// A workflow with its current version's definition (`changed` on PUT: whether a version was made).
    static let workflow = Schema.object(
        [
            "key": Schema.string(), "version": Schema.integer, "enabled": Schema.boolean,
            "triggerEvent": Schema.string(),
            "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp, "versionCreatedAt": Schema.timestamp,
            "digest": Schema.string("SHA-256 of the canonical definition, hex"),
            "definition": Schema.ref("WorkflowDefinition"),
            "changed": Schema.boolean
        ],
        required: [
            "key", "version", "enabled", "triggerEvent", "createdAt", "updatedAt", "versionCreatedAt", "digest",
            "definition"
        ])

    static let version = Schema.object(
        [
            "key": Schema.string(), "version": Schema.integer, "digest": Schema.string(), "createdAt": Schema.timestamp,
            "definition": Schema.ref("WorkflowDefinition")
        ], required: ["key", "version", "digest", "createdAt", "definition"])

    static let dryRunRules = [
        "subscriber as a string is the id of one of the tenant's subscribers (else 422 validation_failed at path subscriber)",
        "receipts name send steps, arrivals waitFor steps, acknowledged local send steps, throttled throttle steps (others are ignored)"
    ]

    /// The dry run's body. Like every Validator-read body, a JSON null counts as an absent member,
    /// so the optional members are nullable.
    static var dryRunRequest: JSONValue {
        let identifier = Schema.string(FieldRules.identifierRule)
        let eventName = Schema.string(WorkflowRules.eventNameRule)
        return withRules(
            Schema.object(
                [
                    "subscriber": [
                        "description": "A subscriber id (read from the tenant's subscribers) or a sample",
                        "oneOf": [
                            identifier,
                            Schema.object([
                                "id": Schema.nullable(identifier), "attributes": Schema.nullable(Schema.anyObject),
                                "timezone": Schema.nullable(Schema.timezone),
                                "locale": Schema.nullable(Schema.string(FieldRules.localeRule))
                            ])
                        ]
                    ],
                    "event": Schema.object(
                        [
                            "name": Schema.nullable(eventName), "id": Schema.nullable(identifier),
                            "data": Schema.nullable(Schema.anyObject),
                            "occurredAt": Schema.nullable(dateTime(maxLength: 64))
                        ], description: "The trigger event (name defaults to the trigger's)"),
                    "receipts": Schema.nullable([
                        "type": "object", "description": "Receipts by send step name",
                        "additionalProperties": Schema.object([
                            "delivered": Schema.nullable(Schema.boolean),
                            "opened": Schema.nullable(Schema.boolean)
                        ])
                    ]),
                    "arrivals": Schema.nullable([
                        "type": "object", "description": "Events that arrive during a waitFor, by its step name",
                        "additionalProperties": Schema.object([
                            "name": Schema.nullable(eventName), "data": Schema.nullable(Schema.anyObject),
                            "after": Schema.nullable(
                                Schema.string(
                                    WorkflowRules.durationRule,
                                    "When after the wait begins, e.g. 2h (default at once)"))
                        ])
                    ]),
                    "acknowledged": Schema.nullable(
                        Schema.array(Schema.string(WorkflowRules.stepNameRule), maxItems: 100)),
                    "throttled": Schema.nullable(
                        Schema.adding(
                            ["description": "Throttle steps whose limit the sample has reached (others let it pass)"],
                            to: Schema.array(Schema.string(WorkflowRules.stepNameRule), maxItems: 100))),
                    "events": Schema.nullable(
                        Schema.adding(
                            [
                                "description":
                                    "Further trigger events after event, in order: a digest collects those of its key that arrive before its window closes"
                            ],
                            to: Schema.array(
                                Schema.object([
                                    "id": Schema.nullable(identifier), "name": Schema.nullable(eventName),
                                    "data": Schema.nullable(Schema.anyObject),
                                    "after": Schema.nullable(
                                        Schema.string(
                                            WorkflowRules.durationRule,
                                            "When after the start it arrives, e.g. 2m (default at the start)"))
                                ]), maxItems: WorkflowDryRunRules.maxEvents))),
                    "start": Schema.nullable(dateTime()),
                    "version": Schema.nullable(["type": "integer", "minimum": 1, "maximum": 2_147_483_647])
                ], required: ["subscriber", "event"]), dryRunRules)
    }

    /// An RFC 3339 date-time with an offset (what `EventTimestamp.parse` reads).
    static func dateTime(maxLength: Int? = nil) -> JSONValue {
        var o: [String: JSONValue] = [
            "type": "string", "format": "date-time",
            "description": "RFC 3339 date-time with an offset, such as 2025-01-31T18:00:00Z"
        ]
        if let maxLength { o["maxLength"] = .int(Int64(maxLength)) }
        return .object(o)
    }

    static let dryRunResponse = Schema.object(
        [
            "key": Schema.string(), "version": Schema.integer, "triggerMatches": Schema.boolean,
            "status": Schema.string(enumeration: WorkflowRunStatus.shown.map(\.rawValue)),
            "failure": Schema.nullable(
                Schema.object(
                    [
                        "code": Schema.string(enumeration: WorkflowRunFailure.Code.allCases.map(\.rawValue)),
                        "message": Schema.string()
                    ], required: ["code", "message"])),
            "startedAt": Schema.timestamp, "endedAt": Schema.nullable(Schema.timestamp),
            "timeline": Schema.array(
                Schema.object(
                    [
                        "at": Schema.timestamp, "step": Schema.nullable(Schema.string()),
                        "kind": Schema.string(enumeration: WorkflowDryRun.Entry.Kind.allCases.map(\.rawValue)),
                        "detail": Schema.anyObject
                    ], required: ["at", "step", "kind", "detail"])),
            "steps": Schema.array(Schema.anyObject)
        ],
        required: ["key", "version", "triggerMatches", "status", "failure", "startedAt", "endedAt", "timeline", "steps"]
    )

    static let settings = Schema.object(
        [
            "quietHours": Schema.nullable(TenantRoutes.quietHours),
            "defaultTimezone": Schema.nullable(
                Schema.adding(
                    ["description": "IANA zone for subscribers without one (else UTC)"],
                    to: Schema.timezone))
        ], required: ["quietHours", "defaultTimezone"])

    static let settingsPatch = Schema.object(
        [
            "quietHours": Schema.nullable(TenantRoutes.quietHours),
            "defaultTimezone": Schema.nullable(Schema.timezone)
        ], description: "Members left out keep their value; null removes one")
}
