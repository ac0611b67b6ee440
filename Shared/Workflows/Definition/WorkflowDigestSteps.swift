import BuzzKitWire

/// `digest {window, key?, list?}`: many trigger events, one run. The first trigger event of a
/// (workflow, subscriber, key) starts a run that waits `window`; every further one of the same
/// (workflow, subscriber, key) that arrives before the window closes joins that run instead of
/// starting one, and one arriving after the close starts the next digest. Only a workflow's first
/// step: its window opens with the run. After it, templates read `digest.count`, `digest.first`,
/// `digest.last` and (with `list`) `digest.list`, and a branch may test `digest.count`.
public struct WorkflowDigest: Sendable, Hashable {
    public var window: WorkflowDuration
    /// A template over the trigger event (`{{ trigger.data.postId }}`); nil: the subscriber alone.
    public var key: WorkflowKeyTemplate?
    /// The trigger data field whose distinct values `{{ digest.list }}` writes.
    public var list: WorkflowDataPath?

    public init(window: WorkflowDuration, key: WorkflowKeyTemplate? = nil, list: WorkflowDataPath? = nil) {
        self.window = window
        self.key = key
        self.list = list
    }
}

/// `throttle {limit, window, key?}`: at most `limit` runs of the workflow per subscriber (and key)
/// pass the step within a rolling `window`; the others end with status `throttled`.
public struct WorkflowThrottle: Sendable, Hashable {
    public var limit: Int
    public var window: WorkflowDuration
    public var key: WorkflowKeyTemplate?

    public init(limit: Int, window: WorkflowDuration, key: WorkflowKeyTemplate? = nil) {
        self.limit = limit
        self.window = window
        self.key = key
    }
}

/// A digest's or throttle's `key`: a template over the trigger event, kept with its text.
public struct WorkflowKeyTemplate: Sendable, Hashable {
    /// What a key template may read: the trigger event (the subscriber is part of every key).
    public static let roots: Set<String> = ["trigger"]
    /// Characters of a key template's text.
    public static let maxLength = 256

    public var text: String
    public var template: WorkflowTemplate

    public init(text: String, template: WorkflowTemplate) {
        self.text = text
        self.template = template
    }

    /// The key for `trigger`: a missing value renders empty (so events without it share a key).
    public func render(_ trigger: WorkflowEvent) -> String {
        var missing: [String] = []
        return template.render(["trigger": trigger.documentJSON], missing: &missing)
    }
}

/// `data.<field>[.<field>...]`: a member of a trigger event's data.
public struct WorkflowDataPath: Sendable, Hashable {
    public var text: String
    /// The members below `data`.
    public var members: [String]

    /// Nil unless `text` is `data.` followed by dot-separated names (letters, digits, `_`, `-`).
    public init?(_ text: String) {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard segments.count >= 2, segments[0] == "data", segments.count <= 9,
            segments.dropFirst().allSatisfy({ s in
                !s.isEmpty && s.count <= 64
                    && s.utf8.allSatisfy { c in
                        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F
                            || c == 0x2D
                    }
            })
        else { return nil }
        self.text = text
        members = Array(segments.dropFirst())
    }

    /// The value at the path in an event's data.
    public func value(in event: WorkflowEvent) -> JSONValue? { WorkflowPaths.lookup(members, in: event.data) }

    static let rule = "must be a path inside the trigger event's data, such as data.actorName"
}

extension WorkflowLimits {
    /// A digest's or throttle's window: 30 days at most.
    public static let maxWindowSeconds: Int64 = 30 * 86_400
    /// A throttle's limit: 1 to 10,000 runs per window.
    public static let maxThrottleLimit = 10_000
}

extension WorkflowDefinition {
    /// The digest step and its settings, when the workflow has one (always its first step).
    public var digest: (step: String, digest: WorkflowDigest)? {
        guard let first = steps.first, case .digest(let digest) = first.kind else { return nil }
        return (first.name, digest)
    }
}
