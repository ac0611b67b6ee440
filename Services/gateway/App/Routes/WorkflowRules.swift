import BuzzKitWire
import BuzzKitWorkflows

/// The text rules of the workflow routes' own fields (dry runs, settings), each a `TextRule`, so
/// the document states what the handlers check.
enum WorkflowRules {
    /// A duration as `WorkflowDuration` reads it: a whole number with no leading zero and a unit
    /// (`30s`, `90m`, `36h`, `7d`), at most 365 days; the pattern spells each unit's range.
    static let durationRule = duration(atMost: WorkflowDuration.maxSeconds, "365 days")

    /// A digest's or throttle's window: a duration of at most 30 days.
    static let windowRule = duration(atMost: WorkflowLimits.maxWindowSeconds, "30 days")

    /// A duration of at most `limit` seconds (`words` says it), the pattern spelling each unit's range.
    static func duration(atMost limit: Int64, _ words: String) -> TextRule {
        let units: [(String, Int64)] = [("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        let alternatives = units.map { "(?:" + decimalPattern(upTo: limit / $0.1) + ")" + $0.0 }
        return TextRule(
            minLength: 2, maxLength: 12, pattern: "^(?:" + alternatives.joined(separator: "|") + ")$",
            problem: "must be a duration such as 30s, 90m, 36h, 7d (at most \(words))"
        ) {
            guard let duration = WorkflowDuration($0) else { return false }
            return duration.seconds <= limit
        }
    }

    /// A step or event name in a dry run's event and arrivals: 1 to 128 characters, no U+0000.
    static let eventNameRule = TextRule.length(1, WorkflowLimits.maxEventNameBytes)
    /// `occurredAt`'s text before it is read as a date-time.
    static let timestampRule = TextRule.length(1, 64)
    /// A step name in `acknowledged`.
    static let stepNameRule = TextRule.length(1, WorkflowLimits.maxNameLength)

    /// An ECMA-262 alternation (no anchors) of the decimal numbers 1 to `max`, no sign, no
    /// leading zero: shorter numbers, then, digit by digit, those below `max` with its prefix.
    static func decimalPattern(upTo max: Int64) -> String {
        let digits = Array(String(max)).map { Int(String($0))! }
        let n = digits.count
        var alternatives: [String] = []
        if n > 1 { alternatives.append(n == 2 ? "[1-9]" : "[1-9][0-9]{0,\(n - 2)}") }
        for i in 0..<n {
            let low = i == 0 ? 1 : 0
            guard digits[i] > low else { continue }
            let prefix = digits[0..<i].map(String.init).joined()
            let rest = n - i - 1
            alternatives.append(prefix + "[\(low)-\(digits[i] - 1)]" + (rest > 0 ? "[0-9]{\(rest)}" : ""))
        }
        alternatives.append(digits.map(String.init).joined())
        return alternatives.joined(separator: "|")
    }
}
