import Foundation

/// Reads configuration values from environment-style key/value pairs, collecting every problem.
///
/// Only executables read the process environment; they pass `ProcessInfo.processInfo.environment`
/// here and build a `Sendable` configuration struct whose every knob has a documented default.
/// Invalid values are collected and reported together by `validate()`, so an operator fixes them in
/// one go instead of one restart per typo.
public struct ConfigReader: Sendable {
    public let environment: [String: String]
    /// Each problem with the variable it concerns.
    private var recorded: [(variable: String, text: String)] = []

    public init(environment: [String: String]) {
        self.environment = environment
    }

    /// The raw value, `nil` when unset or empty.
    public func raw(_ key: String) -> String? {
        guard let value = environment[key]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }

    public func string(_ key: String, default defaultValue: String) -> String {
        raw(key) ?? defaultValue
    }

    public mutating func int(_ key: String, default defaultValue: Int, range: ClosedRange<Int> = Int.min...Int.max)
        -> Int
    {
        guard let text = raw(key) else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            recorded.append((key, "\(key)=\(text) is not an integer in \(range.lowerBound)...\(range.upperBound)"))
            return defaultValue
        }
        return value
    }

    public mutating func bool(_ key: String, default defaultValue: Bool) -> Bool {
        guard let text = raw(key) else { return defaultValue }
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default:
            recorded.append((key, "\(key)=\(text) is not a boolean (true/false)"))
            return defaultValue
        }
    }

    /// A duration such as `250ms`, `30s`, `5m`, `1h`, or a bare number of seconds.
    public mutating func duration(_ key: String, default defaultValue: Duration) -> Duration {
        guard let text = raw(key) else { return defaultValue }
        guard let value = Self.parseDuration(text) else {
            recorded.append((key, "\(key)=\(text) is not a duration (e.g. 500ms, 30s, 5m)"))
            return defaultValue
        }
        return value
    }

    public mutating func logLevel(_ key: String, default defaultValue: Logger.Level) -> Logger.Level {
        guard let text = raw(key) else { return defaultValue }
        guard let level = Logger.Level(name: text) else {
            recorded.append(
                (key, "\(key)=\(text) is not a log level (trace, debug, info, notice, warning, error, critical)"))
            return defaultValue
        }
        return level
    }

    /// Records a problem found by the caller's own checks.
    public mutating func reject(_ key: String, _ reason: String) {
        recorded.append((key, "\(key): \(reason)"))
    }

    /// Every problem recorded so far, as the error `validate()` would throw (empty when none).
    public var collectedError: ConfigurationError {
        ConfigurationError(problems: recorded.map(\.text), variables: recorded.map(\.variable))
    }

    /// Throws one error listing every invalid value.
    public func validate() throws(ConfigurationError) {
        if !recorded.isEmpty { throw collectedError }
    }

    /// `250ms`, `30s`, `5m`, `1h` or a bare number of seconds; nil for anything else.
    public static func parseDuration(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, seconds) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            if suffix == "s", number.hasSuffix("m") { continue }  // "ms" handled first
            guard let value = Double(number), value >= 0 else { return nil }
            return .milliseconds(Int64((value * seconds * 1000).rounded()))
        }
        guard let value = Double(text), value >= 0 else { return nil }
        return .milliseconds(Int64((value * 1000).rounded()))
    }
}

/// Configuration that cannot be used, with every problem found.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// One line per problem, each naming its variable.
    public var problems: [String]
    /// The variables with a problem, in the order found (a variable may repeat).
    public var variables: [String]

    public init(problems: [String], variables: [String]) {
        self.problems = problems
        self.variables = variables
    }

    /// Both lists of `self`, then `other`'s: the problems of two readers in one error.
    public func adding(_ other: ConfigurationError) -> ConfigurationError {
        ConfigurationError(problems: problems + other.problems, variables: variables + other.variables)
    }

    public var description: String { "invalid configuration: " + problems.joined(separator: "; ") }
}
