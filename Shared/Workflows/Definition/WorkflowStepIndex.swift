/// Where every step of a definition sits: its kind, its place in document order and the step a
/// run goes on to once it is done. A run's position is the name of its current step; this table
/// turns a name back into a place in the tree.
public struct WorkflowStepIndex: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var step: WorkflowStep
        /// Position in document (pre-order) order, from 0: a branch comes before its arms.
        public var order: Int
        /// The step that follows once this one is done (for a branch: once its arm is done, i.e.
        /// the step after the whole branch); nil: the run completes.
        public var successor: String?
        /// The JSON path of the step (`steps[2]`, `steps[1].branch.then[0]`).
        public var path: String
        /// The branches this step is nested in, outermost first.
        public var enclosing: [String]
    }

    public private(set) var entries: [String: Entry] = [:]
    /// Step names in document order.
    public private(set) var names: [String] = []
    /// The first step; nil for a definition with no steps.
    public private(set) var first: String?

    public init(_ steps: [WorkflowStep]) {
        first = steps.first?.name
        add(steps, prefix: "steps", after: nil, enclosing: [])
    }

    private mutating func add(_ steps: [WorkflowStep], prefix: String, after: String?, enclosing: [String]) {
        for (i, step) in steps.enumerated() {
            let successor = i + 1 < steps.count ? steps[i + 1].name : after
            guard entries[step.name] == nil else { continue }  // a duplicate name: validation reports it
            entries[step.name] = Entry(
                step: step, order: names.count, successor: successor, path: "\(prefix)[\(i)]",
                enclosing: enclosing)
            names.append(step.name)
            if case .branch(let branch) = step.kind {
                add(
                    branch.then, prefix: "\(prefix)[\(i)].branch.then", after: successor,
                    enclosing: enclosing + [step.name])
                add(
                    branch.otherwise, prefix: "\(prefix)[\(i)].branch.else", after: successor,
                    enclosing: enclosing + [step.name])
            }
        }
    }

    public subscript(name: String) -> Entry? { entries[name] }

    /// The step a run enters after deciding `branch`: the first of the chosen arm, or (empty arm)
    /// the step after the branch.
    public func entry(of branch: String, then: Bool) -> String? {
        guard let entry = entries[branch], case .branch(let b) = entry.step.kind else { return nil }
        return (then ? b.then : b.otherwise).first?.name ?? entry.successor
    }

    /// Whether `earlier` comes before `step` in document order and is not `step` itself or
    /// inside it (what a condition of `step` may name).
    public func precedes(_ earlier: String, _ step: String) -> Bool {
        guard let a = entries[earlier], let b = entries[step] else { return false }
        return a.order < b.order && !a.enclosing.contains(step)
    }
}
