import BuzzKitAudience

extension DefinitionReader {
    /// The rules that need the whole tree: what conditions name (an earlier step of the right kind).
    mutating func checkReferences(_ definition: WorkflowDefinition) {
        let index = definition.index
        func walk(_ steps: [WorkflowStep], _ prefix: String) {
            for (i, step) in steps.enumerated() {
                let path = "\(prefix)[\(i)]"
                switch step.kind {
                case .branch(let branch):
                    checkCondition(branch.condition, path + ".branch.if", at: step.name, index)
                    walk(branch.then, path + ".branch.then")
                    walk(branch.otherwise, path + ".branch.else")
                case .waitFor(let waitFor):
                    if let condition = waitFor.condition {
                        checkStepPaths(condition.expression, path + ".waitFor.where", at: step.name, index)
                    }
                default:
                    break
                }
            }
        }
        walk(definition.steps, "steps")
        for (i, rule) in definition.cancelOn.enumerated() {
            if let condition = rule.condition {
                checkStepPaths(condition.expression, "cancelOn[\(i)].where", at: nil, index)
            }
        }
    }

    /// A receipt condition names an earlier step of the right kind; an expression's `steps.X`
    /// paths name earlier steps.
    private mutating func checkCondition(
        _ condition: WorkflowCondition, _ path: String, at step: String,
        _ index: WorkflowStepIndex
    ) {
        switch condition {
        case .expression(let e):
            checkStepPaths(e.expression, path, at: step, index)
        case .opened(let name):
            checkNamed(name, path + ".opened", at: step, index, kind: .send)
        case .delivered(let name):
            checkNamed(name, path + ".delivered", at: step, index, kind: .send)
        case .suppressed(let name):
            checkNamed(name, path + ".suppressed", at: step, index, kind: .send)
        case .matched(let name):
            checkNamed(name, path + ".matched", at: step, index, kind: .waitFor)
        case .all(let items):
            for (i, item) in items.enumerated() { checkCondition(item, "\(path).all[\(i)]", at: step, index) }
        case .any(let items):
            for (i, item) in items.enumerated() { checkCondition(item, "\(path).any[\(i)]", at: step, index) }
        case .not(let inner):
            checkCondition(inner, path + ".not", at: step, index)
        }
    }

    private mutating func checkNamed(
        _ name: String, _ path: String, at step: String?, _ index: WorkflowStepIndex,
        kind: WorkflowStepKind.Name?
    ) {
        guard let entry = index[name] else {
            add(path, "names no step: there is no step '\(name)'")
            return
        }
        if let step, !index.precedes(name, step) {
            add(path, "names '\(name)', which comes later: a condition reads only steps before it")
            return
        }
        if let kind, entry.step.kind.name != kind {
            add(path, "names '\(name)', a \(entry.step.kind.name.rawValue) step: it must name a \(kind.rawValue) step")
        }
    }

    private mutating func checkStepPaths(
        _ expression: AudienceExpression, _ path: String, at step: String?,
        _ index: WorkflowStepIndex
    ) {
        for p in Self.paths(of: expression) where p.first == "steps" && p.count >= 2 {
            let kind: WorkflowStepKind.Name? = p.count >= 3 && p[2] == "event" ? .waitFor : nil
            checkNamed(p[1], path, at: step, index, kind: kind)
        }
    }
}
