/// A parsed, type-checked audience expression: the typed AST that the evaluator walks and the SQL
/// compiler translates. Build one with `AudienceExpression.parse(_:context:limits:)`.
///
/// Semantics shared by the evaluator and the SQL (the tests hold them to it):
/// - A comparison is true only when the value exists and has the literal's JSON type: a string
///   never equals a number, `plan != "pro"` is false when `plan` is missing or a number.
/// - Strings compare byte-wise (UTF-8, Postgres `COLLATE "C"`), numbers numerically.
/// - Attribute paths walk JSON objects only; anything else on the way means "missing".
/// - Event clauses read the subscriber's events (its own id plus every anonymous id aliased to it),
///   `within: "7d"` meaning `now - 7d <= occurredAt <= now`; without `within`, all stored events.
public indirect enum AudienceExpression: Sendable, Hashable {
    case and([AudienceExpression])
    case or([AudienceExpression])
    case not(AudienceExpression)
    /// `operand op literal`.
    case compare(AudienceOperand, AudienceComparison, AudienceLiteral)
    /// `operand in [literals]`: equal to one of them (typed).
    case isIn(AudienceOperand, [AudienceLiteral])
    /// `operand startsWith "prefix"`: a string value starting with these bytes.
    case startsWith(AudienceOperand, String)
    /// `exists(path)`: present and not JSON `null` (for a field: not NULL).
    case exists(AudienceOperand)
    /// `in_topic("key")`.
    case inTopic(String)
    /// `has_device()` / `has_device(environment: "production")`: an active device.
    case hasDevice(environment: String?)
    /// `did("name", within: "7d", where: <condition on the event's data>)`.
    case did(AudienceEventClause)
    /// `count("name", within: "30d", where: ...) >= n`.
    case count(AudienceEventClause, AudienceComparison, Int64)
    /// `path op path` (`event.data.workoutId == trigger.data.workoutId`): only in the `.document`
    /// context. Both values must exist and have the same JSON type (string, number or boolean;
    /// booleans only with `==`/`!=`), else it is false, as with a literal.
    case comparePaths([String], AudienceComparison, [String])
}

/// What a comparison reads.
public enum AudienceOperand: Sendable, Hashable {
    /// A subscriber attribute (`profile.age`), or in an event condition a key path in the event's `data`.
    case attribute([String])
    /// The subscriber's IANA time zone (NULL when unknown).
    case timezone
    /// The subscriber's locale (NULL when unknown).
    case locale
    /// When the subscriber was created; compares with ISO 8601 date-time strings.
    case createdAt
}

public enum AudienceComparison: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="

    /// Applies the operator to an ordering result (`a` compared with `b`).
    func holds(_ order: Int) -> Bool {
        switch self {
        case .equal: order == 0
        case .notEqual: order != 0
        case .less: order < 0
        case .lessOrEqual: order <= 0
        case .greater: order > 0
        case .greaterOrEqual: order >= 0
        }
    }
}

/// A literal on the right of a comparison.
public enum AudienceLiteral: Sendable, Hashable {
    case string(String)
    case number(AudienceNumber)
    case bool(Bool)
    /// An ISO 8601 date-time, in microseconds since 1970 (only against `createdAt`).
    case timestamp(Int64)
}

/// A number literal, kept as written (valid JSON number text) so Postgres compares it exactly.
public struct AudienceNumber: Sendable, Hashable {
    public var text: String
    public var value: Double
    /// Set when the text is an integer that fits in 64 bits (compared exactly with integer attributes).
    public var integer: Int64?

    public init?(_ text: String) {
        guard let value = Double(text), value.isFinite else { return nil }
        self.text = text
        self.value = value
        self.integer = Int64(text)
    }

    /// An integer value (a path compared with another path).
    public init(integer: Int64) {
        text = String(integer)
        value = Double(integer)
        self.integer = integer
    }

    /// A finite double (a path compared with another path); nil for NaN and infinities.
    public init?(double: Double) {
        guard double.isFinite else { return nil }
        text = "\(double)"
        value = double
        integer = nil
    }
}

/// The event part of `did(...)` and `count(...)`.
public struct AudienceEventClause: Sendable, Hashable {
    public var name: String
    /// The window before `now`, in seconds; nil: all stored events.
    public var withinSeconds: Int64?
    /// A condition on the event's `data` (paths are keys in `data`).
    public var condition: AudienceExpression?

    public init(name: String, withinSeconds: Int64? = nil, condition: AudienceExpression? = nil) {
        self.name = name
        self.withinSeconds = withinSeconds
        self.condition = condition
    }
}

/// Where an expression is evaluated: on a subscriber (audiences, segments), on one event's `data`
/// (`did(..., where:)`), or on one JSON document (workflow conditions: `trigger.where`,
/// `cancelOn.where`, `waitFor.where`, `branch.if`).
public enum AudienceContext: Sendable, Hashable {
    case subscriber
    /// Paths are keys of the event's `data`; subscriber fields, topics, devices and event clauses
    /// are not available.
    case event
    /// Paths are read from one JSON document whose top-level members are `roots` (a workflow's
    /// `event`, `trigger`, `subscriber`, `steps`): every path starts with one of them (anything else
    /// is refused with its line and column), two paths may be compared with each other, and only
    /// `exists(...)` of the functions is available. Evaluated in memory only
    /// (`matches(document:)`); such an expression has no SQL form.
    case document(roots: Set<String>)
}
