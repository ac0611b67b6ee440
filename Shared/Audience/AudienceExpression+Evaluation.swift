import BuzzKitWire
import Foundation

extension AudienceExpression {
    /// Evaluates the expression for one subscriber, with the same semantics as the compiled SQL.
    /// `now` anchors `within:` windows.
    public func matches(_ subject: AudienceSubject, now: Date) -> Bool {
        matches(subject, nowMicroseconds: EventTimestamp.microseconds(now))
    }

    public func matches(_ subject: AudienceSubject, nowMicroseconds now: Int64) -> Bool {
        switch self {
        case .and(let items): return items.allSatisfy { $0.matches(subject, nowMicroseconds: now) }
        case .or(let items): return items.contains { $0.matches(subject, nowMicroseconds: now) }
        case .not(let inner): return !inner.matches(subject, nowMicroseconds: now)
        case .inTopic(let key): return subject.topics.contains(key)
        case .hasDevice(let environment):
            return subject.devices.contains { $0.active && (environment == nil || $0.environment == environment) }
        case .did(let clause):
            return subject.events.contains { clause.includes($0, nowMicroseconds: now) }
        case .count(let clause, let op, let n):
            let count = Int64(subject.events.lazy.filter { clause.includes($0, nowMicroseconds: now) }.count)
            return op.holds(count < n ? -1 : count == n ? 0 : 1)
        case .comparePaths(let left, let op, let right):
            return Self.comparePaths(left, op, right, in: subject.attributes)
        default:
            return matchesLeaf { operand in
                switch operand {
                case .attribute(let path):
                    return AudienceValue.lookup(path, in: subject.attributes).map(AudienceValue.json)
                case .timezone: return subject.timezone.map(AudienceValue.text)
                case .locale: return subject.locale.map(AudienceValue.text)
                case .createdAt: return .timestamp(subject.createdAtMicroseconds)
                }
            }
        }
    }

    /// Evaluates an expression parsed in the `.event` context on one event's `data` (workflow
    /// `trigger.where`, `cancelOn.where`). Subscriber-only conditions (topics, devices, event
    /// clauses, fields) cannot occur in that context; should one be here anyway it is false.
    public func matches(eventData data: JSONValue) -> Bool {
        switch self {
        case .and(let items): return items.allSatisfy { $0.matches(eventData: data) }
        case .or(let items): return items.contains { $0.matches(eventData: data) }
        case .not(let inner): return !inner.matches(eventData: data)
        case .inTopic, .hasDevice, .did, .count: return false
        case .comparePaths(let left, let op, let right): return Self.comparePaths(left, op, right, in: data)
        default:
            return matchesLeaf { operand in
                guard case .attribute(let path) = operand else { return nil }
                return AudienceValue.lookup(path, in: data).map(AudienceValue.json)
            }
        }
    }

    /// Evaluates an expression parsed in the `.document` context on its document (a workflow's
    /// `{"event": ..., "trigger": ..., "subscriber": ..., "steps": ...}`): paths are read from the
    /// document's root, two paths compare under the typed rules.
    public func matches(document: JSONValue) -> Bool { matches(eventData: document) }

    /// `left op right` on two values of `root`: both present, same JSON type (string, number,
    /// boolean; booleans only with == and !=), else false.
    static func comparePaths(_ left: [String], _ op: AudienceComparison, _ right: [String], in root: JSONValue) -> Bool
    {
        guard let a = AudienceValue.lookup(left, in: root), let b = AudienceValue.lookup(right, in: root) else {
            return false
        }
        let literal: AudienceLiteral
        switch b {
        case .string(let s): literal = .string(s)
        case .bool(let flag):
            guard op == .equal || op == .notEqual else { return false }
            literal = .bool(flag)
        case .int(let i): literal = .number(AudienceNumber(integer: i))
        case .double(let d):
            guard let number = AudienceNumber(double: d) else { return false }
            literal = .number(number)
        default: return false
        }
        guard let order = AudienceValue.json(a).compare(to: literal) else { return false }
        return op.holds(order)
    }

    /// compare / isIn / startsWith / exists on a value read by `read` (nil: missing).
    private func matchesLeaf(_ read: (AudienceOperand) -> AudienceValue?) -> Bool {
        switch self {
        case .compare(let operand, let op, let literal):
            guard let value = read(operand), let order = value.compare(to: literal) else { return false }
            return op.holds(order)
        case .isIn(let operand, let literals):
            guard let value = read(operand) else { return false }
            return literals.contains { value.compare(to: $0) == 0 }
        case .startsWith(let operand, let prefix):
            guard let text = read(operand)?.string else { return false }
            return text.utf8.starts(with: prefix.utf8)
        case .exists(let operand):
            guard let value = read(operand) else { return false }
            if case .json(.null) = value { return false }
            return true
        default:
            return false
        }
    }
}

extension AudienceEventClause {
    /// Whether `event` counts for this clause at `now`.
    public func includes(_ event: AudienceEvent, nowMicroseconds now: Int64) -> Bool {
        guard event.name.utf8.elementsEqual(name.utf8) else { return false }
        if let withinSeconds {
            guard event.occurredAtMicroseconds >= now - withinSeconds * 1_000_000, event.occurredAtMicroseconds <= now
            else {
                return false
            }
        }
        return condition?.matches(eventData: event.data) ?? true
    }
}

/// A value read from a subscriber or event, compared with a literal under the typed rules.
enum AudienceValue {
    case json(JSONValue)
    case text(String)
    case timestamp(Int64)

    /// Walks objects only (an array or scalar on the way means missing).
    static func lookup(_ path: [String], in root: JSONValue) -> JSONValue? {
        var value = root
        for key in path {
            guard case .object(let object) = value, let next = object[key] else { return nil }
            value = next
        }
        return value
    }

    var string: String? {
        switch self {
        case .json(.string(let s)), .text(let s): s
        default: nil
        }
    }

    /// -1/0/1 when the value has the literal's type; nil when the types differ.
    func compare(to literal: AudienceLiteral) -> Int? {
        switch (self, literal) {
        case (.timestamp(let a), .timestamp(let b)):
            return a < b ? -1 : a == b ? 0 : 1
        case (.json(.bool(let a)), .bool(let b)):
            return a == b ? 0 : (a ? 1 : -1)
        case (.json(.int(let a)), .number(let b)):
            if let exact = b.integer { return a < exact ? -1 : a == exact ? 0 : 1 }
            return Self.order(Double(a), b.value)
        case (.json(.double(let a)), .number(let b)):
            return Self.order(a, b.value)
        case (_, .string(let b)):
            guard let a = string else { return nil }
            return Self.order(Array(a.utf8), Array(b.utf8))
        default:
            return nil
        }
    }

    private static func order(_ a: Double, _ b: Double) -> Int { a < b ? -1 : a == b ? 0 : 1 }

    private static func order(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a == b { return 0 }
        return a.lexicographicallyPrecedes(b) ? -1 : 1
    }
}
