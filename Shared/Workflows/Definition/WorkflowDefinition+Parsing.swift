import BuzzKitAudience
import BuzzKitWire

/// Bounds that keep one definition small enough to validate, store and walk cheaply.
public enum WorkflowLimits {
    /// Steps in the whole definition, branches included.
    public static let maxSteps = 100
    /// Branches nested in branches.
    public static let maxBranchDepth = 8
    public static let maxCancelRules = 20
    /// Step names: 1 to 64 of `A-Z a-z 0-9 _ - .`.
    public static let maxNameLength = 64
    /// Event names, in UTF-8 bytes (as events are named).
    public static let maxEventNameBytes = 128
    /// Conditions nested in `all`/`any`/`not`.
    public static let maxConditionDepth = 8
}

extension WorkflowDefinition {
    /// Roots of each kind of condition (see `WorkflowPaths`).
    public static let triggerRoots: Set<String> = ["event", "trigger", "subscriber"]
    public static let cancelRoots: Set<String> = ["event", "trigger", "subscriber", "steps"]
    public static let waitForRoots: Set<String> = ["event", "trigger", "subscriber", "steps"]
    public static let branchRoots: Set<String> = ["trigger", "subscriber", "steps", "digest"]

    /// Reads and validates a definition (`{trigger, cancelOn?, steps, enabled?}`), collecting every
    /// problem with its JSON path:
    /// - unknown members, unknown step kinds, a step with no kind or two;
    /// - step names missing, malformed or used twice;
    /// - durations (`"30s"`, `"90m"`, `"36h"`, `"7d"`, at most 365 d), times (`"HH:MM"`), IANA zones;
    /// - expressions that do not parse (with line and column), paths that are not fields, a
    ///   condition naming an unknown step, a later one, or one of the wrong kind;
    /// - send content over APNs's rules and limits (`MessageContent`'s validation), templates that
    ///   do not parse, a `deliver: "local"` send that does not directly follow a `waitUntil`;
    /// - a digest anywhere but first, windows over 30 days, key templates that do not parse, a
    ///   `list` outside the trigger's `data`, a throttle `limit` under 1; `digest.*` read without a
    ///   digest step (or `digest.list` without its `list`).
    public static func parse(_ json: JSONValue) -> Result<WorkflowDefinition, WorkflowDefinitionRejection> {
        var reader = DefinitionReader()
        let definition = reader.definition(json)
        // What conditions name is checked on the whole tree: only when no step was dropped for
        // its own problems (the tree's paths would be off).
        if let definition, !reader.droppedSteps {
            reader.checkReferences(definition)
        }
        if let definition, reader.issues.isEmpty { return .success(definition) }
        return .failure(WorkflowDefinitionRejection(issues: reader.issues))
    }
}

/// Reads the JSON, noting each problem; `checkReferences` then checks what needs the whole tree.
struct DefinitionReader {
    var issues: [ValidationIssue] = []
    /// Whether a step was left out of the tree for its own problems.
    private(set) var droppedSteps = false
    private var stepCount = 0
    /// The path of the first step of each name, for duplicates.
    private var namePaths: [String: String] = [:]
    /// The workflow's digest step, once read (it is the first step, so every later one may read it).
    private var digest: WorkflowDigest?

    mutating func add(_ path: String, _ message: String, line: Int? = nil, column: Int? = nil) {
        issues.append(ValidationIssue(path: path, message: message, line: line, column: column))
    }

    /// The members of an object, noting unknown ones; nil (and an issue) when not an object.
    private mutating func members(
        _ value: JSONValue?, _ path: String, allowed: Set<String>,
        what: String = "an object"
    ) -> [String: JSONValue]? {
        guard let value, !value.isNull else {
            add(path, "is required")
            return nil
        }
        guard case .object(let o) = value else {
            add(path, "must be \(what)")
            return nil
        }
        for key in o.keys.sorted() where !allowed.contains(key) { add(join(path, key), "is not a known field") }
        // A definition says what it means: a member is given with a value or left out.
        for key in o.keys.sorted() where allowed.contains(key) && o[key]?.isNull == true {
            add(join(path, key), "must not be null (leave the member out)")
        }
        return o
    }

    private func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : path + "." + key }

    private mutating func string(_ o: [String: JSONValue], _ key: String, _ path: String, required: Bool = true)
        -> String?
    {
        let p = join(path, key)
        guard let value = o[key] else {
            if required { add(p, "is required") }
            return nil
        }
        if value.isNull { return nil }  // reported by `members` (or by `step` for a name)
        guard case .string(let s) = value else {
            add(p, "must be a string")
            return nil
        }
        guard !s.isEmpty else {
            add(p, "must not be empty")
            return nil
        }
        return s
    }

    private mutating func eventName(_ o: [String: JSONValue], _ key: String, _ path: String) -> String? {
        guard let name = string(o, key, path) else { return nil }
        guard name.utf8.count <= WorkflowLimits.maxEventNameBytes else {
            add(join(path, key), "must be at most \(WorkflowLimits.maxEventNameBytes) bytes")
            return nil
        }
        return name
    }

    mutating func expression(_ text: String, _ path: String, roots: Set<String>) -> WorkflowExpression? {
        do {
            let expression = try AudienceExpression.parse(text, context: .document(roots: roots))
            var ok = true
            for p in Self.paths(of: expression) {
                if let problem = WorkflowPaths.problem(p, roots: roots) {
                    add(path, problem)
                    ok = false
                } else if !checkDigestPath(p, path) {
                    ok = false
                }
            }
            return ok ? WorkflowExpression(text: text, expression: expression) : nil
        } catch {
            issues.append(error.issue(path: path))
            return nil
        }
    }

    /// Every path an expression reads.
    static func paths(of expression: AudienceExpression) -> [[String]] {
        switch expression {
        case .and(let items), .or(let items): return items.flatMap { paths(of: $0) }
        case .not(let inner): return paths(of: inner)
        case .compare(let operand, _, _), .isIn(let operand, _), .startsWith(let operand, _), .exists(let operand):
            if case .attribute(let p) = operand { return [p] }
            return []
        case .comparePaths(let a, _, let b): return [a, b]
        case .did(let clause), .count(let clause, _, _): return clause.condition.map { paths(of: $0) } ?? []
        case .inTopic, .hasDevice: return []
        }
    }

    // MARK: - The document

    mutating func definition(_ json: JSONValue) -> WorkflowDefinition? {
        guard let o = members(json, "", allowed: ["trigger", "cancelOn", "steps", "enabled"], what: "a JSON object")
        else {
            if issues.last?.path == "" { issues[issues.count - 1].path = "body" }
            return nil
        }
        let trigger = rule(o["trigger"], "trigger", roots: WorkflowDefinition.triggerRoots)
        var cancelOn: [WorkflowEventRule] = []
        if let value = o["cancelOn"], !value.isNull {
            if case .array(let items) = value {
                if items.count > WorkflowLimits.maxCancelRules {
                    add("cancelOn", "at most \(WorkflowLimits.maxCancelRules) rules, got \(items.count)")
                }
                for (i, item) in items.enumerated() {
                    if let r = rule(item, "cancelOn[\(i)]", roots: WorkflowDefinition.cancelRoots) {
                        cancelOn.append(r)
                    }
                }
            } else {
                add("cancelOn", "must be an array of {event, where?}")
            }
        }
        var enabled: Bool?
        if let value = o["enabled"], !value.isNull {
            if case .bool(let b) = value { enabled = b } else { add("enabled", "must be true or false") }
        }
        var steps: [WorkflowStep] = []
        switch o["steps"] {
        case nil, .null?:
            add("steps", "is required")
        case .array(let items)?:
            if items.isEmpty { add("steps", "must have at least one step") }
            steps = self.steps(items, "steps", depth: 0)
        default:
            add("steps", "must be an array of steps")
        }
        if stepCount > WorkflowLimits.maxSteps {
            add("steps", "at most \(WorkflowLimits.maxSteps) steps in a workflow (branches included), got \(stepCount)")
        }
        // An invalid trigger is reported; the rest is still checked against a placeholder.
        return WorkflowDefinition(
            trigger: trigger ?? WorkflowEventRule(event: ""), cancelOn: cancelOn, steps: steps,
            enabled: enabled)
    }

    private mutating func rule(_ value: JSONValue?, _ path: String, roots: Set<String>) -> WorkflowEventRule? {
        guard let o = members(value, path, allowed: ["event", "where"], what: "an object {event, where?}") else {
            return nil
        }
        let event = eventName(o, "event", path)
        var condition: WorkflowExpression?
        var ok = true
        if let text = string(o, "where", path, required: false) {
            condition = expression(text, join(path, "where"), roots: roots)
            ok = condition != nil
        } else if o["where"].map({ !$0.isNull }) ?? false {
            ok = false
        }
        guard let event, ok else { return nil }
        return WorkflowEventRule(event: event, condition: condition)
    }

    // MARK: - Steps

    private mutating func steps(_ items: [JSONValue], _ path: String, depth: Int) -> [WorkflowStep] {
        var steps: [WorkflowStep] = []
        var previousKind: WorkflowStepKind.Name?
        for (i, item) in items.enumerated() {
            stepCount += 1
            let stepPath = "\(path)[\(i)]"
            // A digest's window opens with its run: it is the workflow's first step.
            if case .object(let o) = item, o["digest"] != nil, depth > 0 || i > 0 {
                add(
                    stepPath + ".digest",
                    "a digest must be the workflow's first step: the first trigger event of its key starts the "
                        + "run and the later ones join it")
            }
            if let s = step(item, stepPath, depth: depth) {
                steps.append(s)
                if depth == 0, i == 0, case .digest(let d) = s.kind { digest = d }
            } else {
                droppedSteps = true
            }
            // A local send ends a local window: the step before it (in the same list) is a waitUntil.
            if case .object(let o) = item, case .object(let send)? = o["send"], send["deliver"] == "local",
                previousKind != .waitUntil
            {
                add(
                    stepPath + ".send.deliver",
                    "a local send must come directly after a waitUntil step "
                        + "(the wait is the local window: the plan goes to the device when it begins)")
            }
            previousKind = item.objectValue.flatMap { o in
                WorkflowStepKind.Name.allCases.first { o[$0.rawValue] != nil }
            }
        }
        return steps
    }

    private mutating func step(_ value: JSONValue, _ path: String, depth: Int) -> WorkflowStep? {
        guard case .object(let o) = value else {
            add(
                path,
                "must be an object {name, <kind>: {...}} with a kind of "
                    + WorkflowStepKind.names.joined(separator: ", "))
            return nil
        }
        if o["name"]?.isNull == true { add(join(path, "name"), "is required") }
        let name = string(o, "name", path)
        if let name, !Self.isValidName(name) {
            add(join(path, "name"), "must be 1 to \(WorkflowLimits.maxNameLength) of letters, digits, _ - .")
        }
        if let name {
            if let earlier = namePaths[name] {
                add(join(path, "name"), "'\(name)' is also the name of \(earlier): step names are unique in a workflow")
            } else {
                namePaths[name] = path
            }
        }
        let kinds = o.keys.filter { WorkflowStepKind.names.contains($0) }.sorted()
        for key in o.keys.sorted() where key != "name" && !WorkflowStepKind.names.contains(key) {
            add(
                join(path, key),
                "is not a known step kind or field (a step has a name and one of "
                    + WorkflowStepKind.names.joined(separator: ", ") + ")")
        }
        guard kinds.count == 1, let kindName = kinds.first, let kindType = WorkflowStepKind.Name(rawValue: kindName)
        else {
            if kinds.isEmpty {
                add(path, "needs one kind: " + WorkflowStepKind.names.joined(separator: ", "))
            } else {
                add(path, "has \(kinds.joined(separator: " and ")): a step has exactly one kind")
            }
            return nil
        }
        let kindPath = join(path, kindName)
        let body = o[kindName] ?? .null
        let kind: WorkflowStepKind?
        switch kindType {
        case .wait: kind = wait(body, kindPath)
        case .waitUntil: kind = waitUntil(body, kindPath)
        case .waitFor: kind = waitFor(body, kindPath)
        case .branch: kind = branch(body, kindPath, depth: depth)
        case .send: kind = send(body, kindPath)
        case .exit: kind = exit(body, kindPath)
        case .digest: kind = digest(body, kindPath)
        case .throttle: kind = throttle(body, kindPath)
        }
        guard let name, let kind else { return nil }
        return WorkflowStep(name: name, kind: kind)
    }

    static func isValidName(_ name: String) -> Bool {
        name.utf8.count <= WorkflowLimits.maxNameLength && !name.isEmpty
            && name.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F
                    || c == 0x2D || c == 0x2E
            }
    }

    private mutating func duration(_ o: [String: JSONValue], _ key: String, _ path: String) -> WorkflowDuration? {
        guard let text = string(o, key, path) else { return nil }
        guard let duration = WorkflowDuration(text) else {
            add(join(path, key), WorkflowDuration.rule)
            return nil
        }
        return duration
    }

    private mutating func wait(_ value: JSONValue, _ path: String) -> WorkflowStepKind? {
        guard let o = members(value, path, allowed: ["duration"], what: "an object {duration}") else { return nil }
        return duration(o, "duration", path).map(WorkflowStepKind.wait)
    }

    private mutating func waitUntil(_ value: JSONValue, _ path: String) -> WorkflowStepKind? {
        guard let o = members(value, path, allowed: ["time", "timezone"], what: "an object {time, timezone}") else {
            return nil
        }
        var time: WallClockTime?
        if let text = string(o, "time", path) {
            time = WallClockTime(text)
            if time == nil { add(join(path, "time"), WallClockTime.rule) }
        }
        var zone: WorkflowTimeZoneChoice? = .subscriber
        if let text = string(o, "timezone", path, required: false) {
            if text == "subscriber" {
                zone = .subscriber
            } else if WorkflowZones.isKnown(text) {
                zone = .named(text)
            } else {
                add(join(path, "timezone"), "must be \"subscriber\" or an IANA time zone such as Europe/Berlin")
                zone = nil
            }
        } else if o["timezone"].map({ !$0.isNull }) ?? false {
            zone = nil
        }
        guard let time, let zone else { return nil }
        return .waitUntil(time, zone)
    }

    private mutating func waitFor(_ value: JSONValue, _ path: String) -> WorkflowStepKind? {
        guard
            let o = members(
                value, path, allowed: ["event", "where", "timeout"], what: "an object {event, where?, timeout}")
        else { return nil }
        let event = eventName(o, "event", path)
        let timeout = duration(o, "timeout", path)
        var condition: WorkflowExpression?
        var ok = true
        if let text = string(o, "where", path, required: false) {
            condition = expression(text, join(path, "where"), roots: WorkflowDefinition.waitForRoots)
            ok = condition != nil
        } else if o["where"].map({ !$0.isNull }) ?? false {
            ok = false
        }
        guard let event, let timeout, ok else { return nil }
        return .waitFor(WorkflowWaitFor(event: event, condition: condition, timeout: timeout))
    }

    private mutating func branch(_ value: JSONValue, _ path: String, depth: Int) -> WorkflowStepKind? {
        guard let o = members(value, path, allowed: ["if", "then", "else"], what: "an object {if, then, else?}") else {
            return nil
        }
        if depth + 1 > WorkflowLimits.maxBranchDepth {
            add(path, "branches nested deeper than \(WorkflowLimits.maxBranchDepth) levels")
            return nil
        }
        let condition = self.condition(o["if"], join(path, "if"), depth: 0)
        func arm(_ key: String, required: Bool) -> [WorkflowStep]? {
            switch o[key] {
            case .null?:
                return nil  // reported by `members`
            case nil:
                if required {
                    add(join(path, key), "is required (an array of steps, possibly empty)")
                    return nil
                }
                return []
            case .array(let items)?:
                return steps(items, join(path, key), depth: depth + 1)
            default:
                add(join(path, key), "must be an array of steps")
                return nil
            }
        }
        let then = arm("then", required: true)
        let otherwise = arm("else", required: false)
        guard let condition, let then, let otherwise else { return nil }
        return .branch(WorkflowBranch(condition: condition, then: then, otherwise: otherwise))
    }

    private mutating func condition(_ value: JSONValue?, _ path: String, depth: Int) -> WorkflowCondition? {
        let forms = "an expression string or one of {opened}, {delivered}, {matched}, {suppressed}, {all}, {any}, {not}"
        guard depth <= WorkflowLimits.maxConditionDepth else {
            add(path, "conditions nested deeper than \(WorkflowLimits.maxConditionDepth) levels")
            return nil
        }
        switch value {
        case nil, .null?:
            add(path, "is required: \(forms)")
            return nil
        case .string(let text)?:
            guard !text.isEmpty else {
                add(path, "must not be empty")
                return nil
            }
            return expression(text, path, roots: WorkflowDefinition.branchRoots).map(WorkflowCondition.expression)
        case .object(let o)? where o.count == 1:
            let (key, inner) = o.first!
            let p = join(path, key)
            switch key {
            case "opened", "delivered", "matched", "suppressed":
                guard case .string(let step) = inner, !step.isEmpty else {
                    add(p, "must be the name of a step")
                    return nil
                }
                switch key {
                case "opened": return .opened(step)
                case "delivered": return .delivered(step)
                case "suppressed": return .suppressed(step)
                default: return .matched(step)
                }
            case "all", "any":
                guard case .array(let items) = inner, !items.isEmpty else {
                    add(p, "must be a non-empty array of conditions")
                    return nil
                }
                var parts: [WorkflowCondition] = []
                var ok = true
                for (i, item) in items.enumerated() {
                    if let c = condition(item, "\(p)[\(i)]", depth: depth + 1) { parts.append(c) } else { ok = false }
                }
                guard ok else { return nil }
                return key == "all" ? .all(parts) : .any(parts)
            case "not":
                return condition(inner, p, depth: depth + 1).map(WorkflowCondition.not)
            default:
                add(p, "is not a known condition: \(forms)")
                return nil
            }
        default:
            add(path, "must be \(forms)")
            return nil
        }
    }

    // MARK: - Digest and throttle (issue 28)

    /// `digest.*` needs the workflow's digest step (and `digest.list` its `list`); false when not.
    private mutating func checkDigestPath(_ p: [String], _ path: String) -> Bool {
        guard p.first == "digest" else { return true }
        let dotted = p.joined(separator: ".")
        guard let digest else {
            add(path, "reads \(dotted), but the workflow has no digest step (a digest is the workflow's first step)")
            return false
        }
        if p == ["digest", "list"], digest.list == nil {
            add(path, "reads digest.list, but the digest step has no list (\"list\": \"data.<field>\")")
            return false
        }
        return true
    }

    /// A digest's or throttle's window: a duration of at most 30 days.
    private mutating func window(_ o: [String: JSONValue], _ path: String) -> WorkflowDuration? {
        guard let window = duration(o, "window", path) else { return nil }
        guard window.seconds <= WorkflowLimits.maxWindowSeconds else {
            add(join(path, "window"), "must be at most 30 days (\(window.text) is longer)")
            return nil
        }
        return window
    }

    /// A `key` template over the trigger event; `ok` false when one is given and refused.
    private mutating func keyTemplate(_ o: [String: JSONValue], _ path: String, ok: inout Bool) -> WorkflowKeyTemplate?
    {
        guard let text = string(o, "key", path, required: false) else {
            if o["key"].map({ !$0.isNull }) ?? false { ok = false }
            return nil
        }
        guard text.count <= WorkflowKeyTemplate.maxLength else {
            add(join(path, "key"), "must be at most \(WorkflowKeyTemplate.maxLength) characters")
            ok = false
            return nil
        }
        switch WorkflowTemplate.parse(text, roots: WorkflowKeyTemplate.roots) {
        case .success(let template):
            return WorkflowKeyTemplate(text: text, template: template)
        case .failure(let error):
            add(join(path, "key"), "template: " + error.message, line: 1, column: error.column)
            ok = false
            return nil
        }
    }

    private mutating func digest(_ value: JSONValue, _ path: String) -> WorkflowStepKind? {
        guard
            let o = members(
                value, path, allowed: ["window", "key", "list"], what: "an object {window, key?, list?}")
        else { return nil }
        let window = self.window(o, path)
        var ok = true
        let key = keyTemplate(o, path, ok: &ok)
        var list: WorkflowDataPath?
        if let text = string(o, "list", path, required: false) {
            list = WorkflowDataPath(text)
            if list == nil {
                add(join(path, "list"), WorkflowDataPath.rule)
                ok = false
            }
        } else if o["list"].map({ !$0.isNull }) ?? false {
            ok = false
        }
        guard let window, ok else { return nil }
        return .digest(WorkflowDigest(window: window, key: key, list: list))
    }

    private mutating func throttle(_ value: JSONValue, _ path: String) -> WorkflowStepKind? {
        guard
            let o = members(
                value, path, allowed: ["limit", "window", "key"], what: "an object {limit, window, key?}")
        else { return nil }
        let range = "a whole number from 1 to \(WorkflowLimits.maxThrottleLimit)"
        var limit: Int?
        switch o["limit"] {
        case nil: add(join(path, "limit"), "is required: \(range)")
        case .null?: break  // reported by `members`
        case .int(let n)? where n >= 1 && n <= Int64(WorkflowLimits.maxThrottleLimit): limit = Int(n)
        default: add(join(path, "limit"), "must be \(range)")
        }
        let window = self.window(o, path)
        var ok = true
        let key = keyTemplate(o, path, ok: &ok)
        guard let limit, let window, ok else { return nil }
        return .throttle(WorkflowThrottle(limit: limit, window: window, key: key))
    }

    private mutating func exit(_ value: JSONValue, _ path: String) -> WorkflowStepKind? {
        guard members(value, path, allowed: [], what: "an empty object {}") != nil else { return nil }
        return .exit
    }

    private mutating func send(_ value: JSONValue, _ path: String) -> WorkflowStepKind? {
        guard
            let o = members(
                value, path, allowed: WorkflowSend.contentMembers.union(["deliver", "policy"]),
                what: "an object {deliver?, policy?, title, body, ...}")
        else { return nil }
        var deliver: WorkflowDelivery? = .push
        if let text = string(o, "deliver", path, required: false) {
            deliver = WorkflowDelivery(rawValue: text)
            if deliver == nil { add(join(path, "deliver"), "must be \"push\" or \"local\"") }
        } else if o["deliver"].map({ !$0.isNull }) ?? false {
            deliver = nil
        }
        // A local window's plan is already on the device: nothing is there to drop.
        if deliver == .local, o["policy"]?.stringValue == QuietHoursPolicy.drop.rawValue {
            add(join(path, "policy"), "\"drop\" is for push sends only (a local send may respect or ignore)")
        }
        var policy: QuietHoursPolicy? = .respect
        if let text = string(o, "policy", path, required: false) {
            policy = QuietHoursPolicy(rawValue: text)
            if policy == nil { add(join(path, "policy"), "must be \"respect\", \"ignore\" or \"drop\"") }
        } else if o["policy"].map({ !$0.isNull }) ?? false {
            policy = nil
        }
        var content: [String: JSONValue] = [:]
        for (key, member) in o where WorkflowSend.contentMembers.contains(key) && !member.isNull {
            content[key] = member
        }
        let before = issues.count
        // The message rules read the members they know; a step stores what it is given, so
        // anything else inside `action` or a button is refused here.
        if case .object(let action)? = content["action"] {
            for key in action.keys.sorted() where key != "name" && key != "data" {
                add(join(path, "action.\(key)"), "is not a known field")
            }
        }
        if case .object(let action)? = content["action"], action["data"]?.isNull == true {
            add(join(path, "action.data"), "must not be null (leave the member out)")
        }
        if case .array(let buttons)? = content["actions"] {
            let known: Set<String> = ["id", "title", "destructive", "foreground", "input", "placeholder"]
            for (i, button) in buttons.enumerated() {
                guard case .object(let b) = button else { continue }
                for key in b.keys.sorted() where !known.contains(key) {
                    add(join(path, "actions[\(i)].\(key)"), "is not a known field")
                }
                for key in b.keys.sorted() where known.contains(key) && b[key]?.isNull == true {
                    add(join(path, "actions[\(i)].\(key)"), "must not be null (leave the member out)")
                }
            }
        }
        checkTemplates(.object(content), path)
        checkContent(content, path)
        guard let deliver, let policy, issues.count == before else { return nil }
        return .send(WorkflowSend(deliver: deliver, policy: policy, content: content))
    }

    /// Every string in the content that holds a placeholder must parse.
    private mutating func checkTemplates(_ value: JSONValue, _ path: String) {
        switch value {
        case .string(let s) where WorkflowTemplate.hasPlaceholder(s):
            switch WorkflowTemplate.parse(s) {
            case .failure(let error): add(path, "template: " + error.message, line: 1, column: error.column)
            case .success(let template): for p in template.paths { _ = checkDigestPath(p, path) }
            }
        case .array(let items):
            for (i, item) in items.enumerated() { checkTemplates(item, "\(path)[\(i)]") }
        case .object(let members):
            for key in members.keys.sorted() { checkTemplates(members[key]!, join(path, key)) }
        default:
            break
        }
    }

    /// The message content rules (`MessageContent.validate`) on the content as written. A rule
    /// about a string that holds a placeholder is left to the run (it depends on the rendered
    /// value), except the payload size, which is checked on the text as written.
    private mutating func checkContent(_ content: [String: JSONValue], _ path: String) {
        guard case .failure(let rejection) = MessageContent.validate(.object(content)) else { return }
        for issue in rejection.issues {
            if issue.path != "payload", let member = Self.value(at: issue.path, in: .object(content)),
                case .string(let s) = member, WorkflowTemplate.hasPlaceholder(s)
            {
                continue
            }
            add(join(path, issue.path), issue.message)
        }
    }

    /// The member at a content issue path (`title`, `action.name`, `actions[1].title`).
    static func value(at path: String, in root: JSONValue) -> JSONValue? {
        var value: JSONValue? = root
        for segment in path.split(separator: ".") {
            var name = Substring(segment)
            var index: Int?
            if let open = name.firstIndex(of: "["), name.hasSuffix("]") {
                index = Int(name[name.index(after: open)..<name.index(before: name.endIndex)])
                name = name[..<open]
            }
            value = value?[String(name)]
            if let index {
                guard case .array(let items)? = value, index < items.count else { return nil }
                value = items[index]
            }
        }
        return value
    }
}
