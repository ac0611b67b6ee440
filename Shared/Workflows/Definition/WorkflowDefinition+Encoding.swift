import BuzzKitWire

extension WorkflowDefinition {
    /// The canonical form of a version: every default written out (`deliver: "push"`,
    /// `policy: "respect"`, `timezone: "subscriber"`, `else: []`), `cancelOn` always present,
    /// absent `where`s left out, texts (durations, expressions, templates) as written, and no
    /// `enabled` (the flag is the workflow's, not the version's). `JSONWriter` sorts keys, so two
    /// documents that mean the same definition give the same `canonicalJSON` bytes, and parsing
    /// `jsonValue` again gives an equal definition.
    public var jsonValue: JSONValue {
        [
            "trigger": trigger.jsonValue,
            "cancelOn": .array(cancelOn.map(\.jsonValue)),
            "steps": .array(steps.map(\.jsonValue))
        ]
    }

    /// `jsonValue` as compact JSON with sorted keys: what a version stores and digests.
    public var canonicalJSON: [UInt8] { jsonValue.jsonBytes }

    /// The names of `cancelOn` events with no `where`: the ones a device can decide on its own
    /// (a local plan's `cancelOn`).
    public var deviceCancelEvents: [String] {
        var seen = Set<String>()
        return cancelOn.filter { $0.condition == nil }.map(\.event).filter { seen.insert($0).inserted }
    }

    /// Every event name a running run of this definition may react to: `cancelOn` and `waitFor`
    /// events, and `$local.scheduled` when it has a local send (the runtime routes a subscriber's
    /// events with these names to their runs).
    public var reactsToEvents: Set<String> {
        var names = Set(cancelOn.map(\.event))
        for name in index.names {
            switch index[name]?.step.kind {
            case .waitFor(let w)?: names.insert(w.event)
            case .send(let s)? where s.deliver == .local: names.insert(WorkflowEngine.localScheduledEvent)
            default: break
            }
        }
        return names
    }
}

extension WorkflowEventRule {
    public var jsonValue: JSONValue {
        var o: [String: JSONValue] = ["event": .string(event)]
        if let condition { o["where"] = .string(condition.text) }
        return .object(o)
    }
}

extension WorkflowStep {
    public var jsonValue: JSONValue {
        .object(["name": .string(name), kind.name.rawValue: kind.bodyJSON])
    }
}

extension WorkflowStepKind {
    var bodyJSON: JSONValue {
        switch self {
        case .wait(let d): return ["duration": .string(d.text)]
        case .waitUntil(let time, let zone): return ["time": .string(time.description), "timezone": .string(zone.text)]
        case .waitFor(let w):
            var o: [String: JSONValue] = ["event": .string(w.event), "timeout": .string(w.timeout.text)]
            if let condition = w.condition { o["where"] = .string(condition.text) }
            return .object(o)
        case .branch(let b):
            return [
                "if": b.condition.jsonValue, "then": .array(b.then.map(\.jsonValue)),
                "else": .array(b.otherwise.map(\.jsonValue))
            ]
        case .send(let s):
            var o = s.content
            o["deliver"] = .string(s.deliver.rawValue)
            o["policy"] = .string(s.policy.rawValue)
            return .object(o)
        case .exit:
            return .object([:])
        case .digest(let d):
            var o: [String: JSONValue] = ["window": .string(d.window.text)]
            if let key = d.key { o["key"] = .string(key.text) }
            if let list = d.list { o["list"] = .string(list.text) }
            return .object(o)
        case .throttle(let t):
            var o: [String: JSONValue] = ["limit": .int(Int64(t.limit)), "window": .string(t.window.text)]
            if let key = t.key { o["key"] = .string(key.text) }
            return .object(o)
        }
    }
}

extension WorkflowCondition {
    public var jsonValue: JSONValue {
        switch self {
        case .expression(let e): .string(e.text)
        case .opened(let s): ["opened": .string(s)]
        case .delivered(let s): ["delivered": .string(s)]
        case .matched(let s): ["matched": .string(s)]
        case .suppressed(let s): ["suppressed": .string(s)]
        case .all(let items): ["all": .array(items.map(\.jsonValue))]
        case .any(let items): ["any": .array(items.map(\.jsonValue))]
        case .not(let inner): ["not": inner.jsonValue]
        }
    }
}
