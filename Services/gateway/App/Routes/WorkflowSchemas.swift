import BuzzKitWire
import BuzzKitWorkflows

/// JSON schemas of workflow definitions and their answers, for the OpenAPI document.
///
/// A definition's shape is stated as JSON Schema, as tightly as `WorkflowDefinition.parse` reads it
/// (members never null, each step a name and exactly one kind, durations within 365 days, content
/// rules as conditionals), with each step kind and condition form a named schema so a client
/// generator makes a type of each. What JSON Schema cannot state (names unique across branches,
/// conditions naming earlier steps, the expression language, templates) is `x-rules`; a definition
/// breaking one is answered 422 `validation_failed` with every problem's JSON path.
enum WorkflowSchemas {
    static let expression = Schema.custom(
        format: "buzzkit-workflow-expression",
        """
        An expression of the audience language over rooted paths (event., trigger., subscriber., steps.: which \
        roots each place reads is in x-rules), 1 to 4096 characters
        """, example: #"subscriber.attributes.plan == "pro""#)
    static let eventName = Schema.string(
        TextRule.length(1, WorkflowLimits.maxEventNameBytes).limited(toUTF8Bytes: WorkflowLimits.maxEventNameBytes))
    static let stepName = Schema.string(
        TextRule.characters(
            ASCIIClass(ASCIIClass.upper + ASCIIClass.lower + ASCIIClass.digits + ASCIIClass.chars("_-.")), 1,
            WorkflowLimits.maxNameLength, problem: "must be 1 to 64 of letters, digits, _ - ."))
    static let duration = Schema.string(WorkflowRules.durationRule, "30s, 90m, 36h, 7d (at most 365 days)")

    /// The rules a definition must follow that JSON Schema cannot state (`x-rules`); a definition
    /// breaking one is answered 422 `validation_failed` with the member's path.
    static let definitionRules = [
        "step names are unique in the whole workflow (branches included)",
        "at most \(WorkflowLimits.maxSteps) steps in all, branches nested at most \(WorkflowLimits.maxBranchDepth) deep, conditions at most \(WorkflowLimits.maxConditionDepth)",
        "where and if expressions are the audience language over rooted paths: trigger.where reads event., trigger., subscriber.; cancelOn and waitFor where also steps.; branch if reads trigger., subscriber., steps. (event.name, event.data.x, trigger.data.x, subscriber.id|timezone|locale|attributes.y, steps.<name>.outcome, steps.<name>.event.data.x); two paths may be compared",
        "a condition names only steps before it: opened, delivered and suppressed a send step, matched a waitFor step, steps.<name>.event a waitFor step",
        "policy: \"drop\" is for push sends only (not with deliver: \"local\")",
        "{{ path }} templates in send content read trigger. and subscriber. paths and are closed with }}",
        "send content follows POST /v1/messages's x-rules (unique button ids, at most 4096 bytes of payload) where no template decides it",
        "a send with deliver: \"local\" comes directly after a waitUntil step in the same list",
        "a digest is the workflow's first step (at most one); digest and throttle windows are at most 30 days; their key is a {{ trigger.* }} template that parses; a digest's list is a path inside the trigger's data (data.<field>); a throttle's limit is 1 to \(WorkflowLimits.maxThrottleLimit)",
        "digest.count, digest.list, digest.first.data.x, digest.last.data.x are read (in send templates and branch if) only in a workflow with a digest step, digest.list only when it has a list",
        "event names are at most 128 bytes of UTF-8"
    ]

    static func withRules(_ schema: JSONValue, _ rules: [String]) -> JSONValue {
        guard case .object(var o) = schema else { return schema }
        o["x-rules"] = .array(rules.map(JSONValue.string))
        return .object(o)
    }

    /// Named component schemas (`#/components/schemas/...`): steps and conditions nest.
    static var components: [String: JSONValue] {
        [
            "WorkflowEventRule": Schema.object(
                ["event": eventName, "where": expression], required: ["event"],
                description: "An event, and optionally what must hold of it"),
            "WorkflowDefinition": withRules(
                Schema.adding(
                    // A digest is the first step only: no later step of the list has one.
                    ["allOf": [["properties": ["steps": ["prefixItems": [.object([:])], "items": noDigest]]]]],
                    to: Schema.object(
                        [
                            "trigger": Schema.ref("WorkflowEventRule"),
                            "cancelOn": Schema.array(
                                Schema.ref("WorkflowEventRule"), maxItems: WorkflowLimits.maxCancelRules),
                            "steps": Schema.array(
                                Schema.ref("WorkflowStep"), minItems: 1, maxItems: WorkflowLimits.maxSteps),
                            "enabled": Schema.boolean
                        ], required: ["trigger", "steps"],
                        description: "A workflow: what starts a run, what cancels it, its named steps")),
                definitionRules),
            "WorkflowStep": step,
            "WorkflowWait": Schema.object(["duration": duration], required: ["duration"]),
            "WorkflowWaitUntil": Schema.object(
                [
                    "time": Schema.string(FieldRules.wallClockRule, "Local wall-clock time HH:MM"),
                    "timezone": zoneChoice
                ], required: ["time"]),
            "WorkflowWaitFor": Schema.object(
                ["event": eventName, "where": expression, "timeout": duration], required: ["event", "timeout"]),
            "WorkflowBranch": Schema.adding(
                // A step inside a branch is never the workflow's first: no digest there.
                ["allOf": [["properties": ["then": ["items": noDigest], "else": ["items": noDigest]]]]],
                to: Schema.object(
                    [
                        "if": Schema.ref("WorkflowCondition"),
                        "then": Schema.array(Schema.ref("WorkflowStep")),
                        "else": Schema.array(Schema.ref("WorkflowStep"))
                    ], required: ["if", "then"])),
            "WorkflowSend": send,
            "WorkflowExit": Schema.object([:], description: "Ends the run: an empty object"),
            "WorkflowDigest": Schema.object(
                [
                    "window": Schema.string(
                        WorkflowRules.windowRule,
                        "How long the first trigger event of a key waits for more (at most 30 d): 10m, 1h"),
                    "key": keyTemplate("without it, the subscriber is the key"),
                    "list": Schema.string(
                        "data.<field> of the trigger events whose distinct values {{ digest.list }} writes (Ana, Ben and 3 others)",
                        pattern: "^data(\\.[A-Za-z0-9_-]{1,64}){1,8}$")
                ], required: ["window"],
                description:
                    "Many trigger events, one run: the first of a (workflow, subscriber, key) starts it and waits window; later ones join it until the window closes (the workflow's first step)"
            ),
            "WorkflowThrottle": Schema.object(
                [
                    "limit": [
                        "type": "integer", "minimum": 1, "maximum": .int(Int64(WorkflowLimits.maxThrottleLimit)),
                        "description": "Runs that may pass within the window"
                    ],
                    "window": Schema.string(WorkflowRules.windowRule, "Rolling window (at most 30 d): 1h, 1d"),
                    "key": keyTemplate("without it, per subscriber")
                ], required: ["limit", "window"],
                description:
                    "At most limit runs of this workflow per subscriber (and key) pass within a rolling window; the others end throttled"
            ),
            "WorkflowCondition": condition,
            "WorkflowConditionOpened": single(
                "opened", stepReference("a send step"), "A send step's notification was opened"),
            "WorkflowConditionDelivered": single(
                "delivered", stepReference("a send step"), "A send step's notification was delivered"),
            "WorkflowConditionMatched": single(
                "matched", stepReference("a waitFor step"), "A waitFor step's event arrived"),
            "WorkflowConditionSuppressed": single(
                "suppressed", stepReference("a send step"),
                "The send policy held a send step's push back (any reason: preferences, a frequency cap, policy drop in quiet hours)"
            ),
            "WorkflowConditionAll": single(
                "all", Schema.array(Schema.ref("WorkflowCondition"), minItems: 1), "Every condition holds"),
            "WorkflowConditionAny": single(
                "any", Schema.array(Schema.ref("WorkflowCondition"), minItems: 1), "One condition holds"),
            "WorkflowConditionNot": single("not", Schema.ref("WorkflowCondition"), "The condition does not hold")
        ]
    }

    /// A step that is not a digest (a digest is the workflow's first step).
    static let noDigest: JSONValue = ["not": ["required": ["digest"]]]

    /// A step's own name: unique in the whole workflow (branches included), which no schema of a
    /// single string can state, so a format of its own. No example: a generator would put the same
    /// one on every step.
    static let uniqueStepName = Schema.custom(
        format: "buzzkit-workflow-step-name",
        """
        1 to \(WorkflowLimits.maxNameLength) of letters, digits, _ - . ; unique in the whole workflow, branches \
        included (a name used twice is 422)
        """)

    /// A condition's step: the name of a step of the kind `kind` that comes before the condition,
    /// which depends on the rest of the definition, so a format of its own.
    static func stepReference(_ kind: String) -> JSONValue {
        Schema.custom(
            format: "buzzkit-workflow-step-reference",
            """
            The name of \(kind) that comes before this condition in the workflow; any other name is 422
            """)
    }

    /// A digest's or throttle's key: a template the server parses, a format of its own.
    static func keyTemplate(_ absent: String) -> JSONValue {
        Schema.custom(
            format: "buzzkit-workflow-key-template",
            """
            A template over the trigger event, 1 to \(WorkflowKeyTemplate.maxLength) characters, whose {{ }} \
            read trigger. paths ({{ trigger.data.postId }}); \(absent). Anything else is 422
            """, example: "{{ trigger.data.postId }}")
    }

    /// `waitUntil.timezone`: `subscriber` or a zone name as one string, a format of its own (a union
    /// of a constant and a string is what generators read worst).
    static let zoneChoice = Schema.custom(
        format: "buzzkit-workflow-time-zone",
        """
        "subscriber" (the subscriber's zone, else the tenant's default, else UTC; the default) or an IANA time \
        zone name this server's zone database knows (format buzzkit-workflow-time-zone); anything else is 422
        """, example: "subscriber")

    /// A named step with exactly one kind (two members: `name` and the kind).
    static var step: JSONValue {
        Schema.adding(
            ["minProperties": 2, "maxProperties": 2],
            to: Schema.object(
                [
                    "name": uniqueStepName,
                    "wait": Schema.ref("WorkflowWait"), "waitUntil": Schema.ref("WorkflowWaitUntil"),
                    "waitFor": Schema.ref("WorkflowWaitFor"), "branch": Schema.ref("WorkflowBranch"),
                    "send": Schema.ref("WorkflowSend"), "exit": Schema.ref("WorkflowExit"),
                    "digest": Schema.ref("WorkflowDigest"), "throttle": Schema.ref("WorkflowThrottle")
                ], required: ["name"], description: "A named step with exactly one kind"))
    }

    /// Send content that may hold `{{ path }}` placeholders: the server parses them (closed, each a
    /// trigger. or subscriber. path), a format of its own a generator must be taught.
    static let templateFormat = "buzzkit-workflow-text"

    /// A send step: content as `POST /v1/messages` takes it (members never null), strings may hold
    /// `{{ path }}` templates (a member holding one is checked once rendered, per run).
    static var send: JSONValue {
        let text = Schema.string(
            "Text; {{ trigger.data.x }}, {{ subscriber.attributes.y }}, {{ subscriber.id }} are filled in per run",
            maxLength: 4096, pattern: Schema.withoutNUL, format: templateFormat)
        /// A rule's pattern, or any text holding a template (checked when rendered).
        func templated(_ rule: TextRule) -> JSONValue {
            [
                "anyOf": [
                    Schema.string(rule),
                    Schema.string(
                        "Holds a {{ template }}", pattern: #"^[^\x00]*\{\{[^\x00]*$"#, format: templateFormat)
                ]
            ]
        }
        let button = Schema.adding(
            [
                "allOf": [
                    [
                        "if": ["required": ["placeholder"]],
                        "then": ["required": ["input"], "properties": ["input": ["const": true]]]
                    ]
                ]
            ],
            to: Schema.object(
                [
                    "id": MessageSchemas.uniqueButtonId, "title": text,
                    "destructive": Schema.boolean, "foreground": Schema.boolean, "input": Schema.boolean,
                    "placeholder": Schema.string(maxLength: 4096)
                ], required: ["id", "title"]))
        return Schema.adding(
            ["allOf": .array(MessageSchemas.contentConditions)],
            to: Schema.object(
                [
                    "deliver": Schema.string(
                        "push (default) or local (directly after a waitUntil)", enumeration: ["push", "local"]),
                    "policy": Schema.string(
                        "Quiet hours: respect (default: moved to their end), ignore (sent), drop (suppressed with reason quiet_hours; push sends only)",
                        enumeration: QuietHoursPolicy.allCases.map(\.rawValue)),
                    "title": text, "subtitle": text, "body": text, "sound": text,
                    "category": CategoryRoutes.reference("The send policy's category (also aps.category)"),
                    "threadId": text,
                    "deepLink": templated(MessageContent.deepLinkRule), "image": templated(MessageContent.imageRule),
                    "data": Schema.anyObject,
                    "action": Schema.object(
                        ["name": Schema.string(MessageContent.actionNameRule), "data": Schema.anyObject],
                        required: ["name"]),
                    "actions": Schema.array(button, maxItems: MessageContent.maxButtons),
                    "badge": ["type": "integer", "minimum": 0, "maximum": 2_147_483_647],
                    "interruptionLevel": Schema.ref("InterruptionLevel"),
                    "priority": Schema.ref("PushPriority")
                ], description: "Sends a push (or plans a local notification); members as POST /v1/messages"))
    }

    /// An expression string or one of the condition objects (each a named schema).
    static var condition: JSONValue {
        [
            "description":
                "An expression string, or {opened|delivered|suppressed: <send step>}, {matched: <waitFor step>}, {all|any: [...]}, {not: ...}",
            "oneOf": [
                expression, Schema.ref("WorkflowConditionOpened"), Schema.ref("WorkflowConditionDelivered"),
                Schema.ref("WorkflowConditionMatched"), Schema.ref("WorkflowConditionSuppressed"),
                Schema.ref("WorkflowConditionAll"),
                Schema.ref("WorkflowConditionAny"), Schema.ref("WorkflowConditionNot")
            ]
        ]
    }

    static func single(_ key: String, _ value: JSONValue, _ description: String) -> JSONValue {
        Schema.object([key: value], required: [key], description: description)
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
        "subscriber as a string is the id of one of the tenant's subscribers (else 404 not_found, details at path subscriber)",
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
                    "receipts": Schema.nullable(
                        Schema.map(
                            Schema.object([
                                "delivered": Schema.nullable(Schema.boolean),
                                "opened": Schema.nullable(Schema.boolean)
                            ]), description: "Receipts by send step name")),
                    "arrivals": Schema.nullable(
                        Schema.map(
                            Schema.object([
                                "name": Schema.nullable(eventName), "data": Schema.nullable(Schema.anyObject),
                                "after": Schema.nullable(
                                    Schema.string(
                                        WorkflowRules.durationRule,
                                        "When after the wait begins, e.g. 2h (default at once)"))
                            ]), description: "Events that arrive during a waitFor, by its step name")),
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
}
