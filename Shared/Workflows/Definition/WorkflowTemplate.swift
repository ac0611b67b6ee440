import BuzzKitWire

/// A content string with `{{ path }}` placeholders: `"Hi {{ subscriber.attributes.name }}"`.
///
/// Paths read the run's document: `trigger.data.x`, `trigger.name`, `subscriber.id`,
/// `subscriber.attributes.y`, `subscriber.timezone`, `subscriber.locale`, and after a digest step
/// `digest.count`, `digest.list`, `digest.first.data.x`, `digest.last.data.x`. A value that is missing
/// (or JSON null) renders empty and is reported (`rendered(...)`'s `missing`); a string renders as
/// itself, any other value as its JSON text. `{{` always opens a placeholder (there is no escape).
public struct WorkflowTemplate: Sendable, Hashable {
    public enum Part: Sendable, Hashable {
        case text(String)
        case value([String])
    }

    public let parts: [Part]

    /// Whether `text` holds a placeholder at all (a fast check before parsing).
    public static func hasPlaceholder(_ text: String) -> Bool { text.contains("{{") }

    /// Roots a content template may read (`digest` only in a workflow with a digest step: the
    /// definition's validation says so).
    public static let roots: Set<String> = ["trigger", "subscriber", "digest"]

    /// Parses `text`; the error says what is wrong and at which character (1-based).
    public static func parse(_ text: String, roots: Set<String> = roots) -> Result<
        WorkflowTemplate, WorkflowTemplateError
    > {
        var parts: [Part] = []
        var literal = ""
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i < scalars.count {
            if scalars[i] == "{", i + 1 < scalars.count, scalars[i + 1] == "{" {
                let open = i
                var j = i + 2
                var inner = ""
                var closed = false
                while j < scalars.count {
                    if scalars[j] == "}", j + 1 < scalars.count, scalars[j + 1] == "}" {
                        closed = true
                        break
                    }
                    inner.unicodeScalars.append(scalars[j])
                    j += 1
                }
                guard closed else {
                    return .failure(
                        WorkflowTemplateError(
                            message: "a placeholder opened with {{ is never closed with }}", column: open + 1))
                }
                let trimmed = inner.trimmingSpaces
                guard !trimmed.isEmpty else {
                    return .failure(WorkflowTemplateError(message: "an empty placeholder {{ }}", column: open + 1))
                }
                let segments = trimmed.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                guard segments.allSatisfy(Self.isSegment) else {
                    return .failure(
                        WorkflowTemplateError(
                            message:
                                "'\(trimmed)' is not a path such as trigger.data.name (letters, digits, _ and - separated by dots)",
                            column: open + 1))
                }
                if let problem = WorkflowPaths.problem(segments, roots: roots) {
                    return .failure(WorkflowTemplateError(message: problem, column: open + 1))
                }
                if !literal.isEmpty {
                    parts.append(.text(literal))
                    literal = ""
                }
                parts.append(.value(segments))
                i = j + 2
            } else {
                literal.unicodeScalars.append(scalars[i])
                i += 1
            }
        }
        if !literal.isEmpty || parts.isEmpty { parts.append(.text(literal)) }
        return .success(WorkflowTemplate(parts: parts))
    }

    /// The paths the placeholders read, in order.
    public var paths: [[String]] {
        parts.compactMap { if case .value(let path) = $0 { path } else { nil } }
    }

    private static func isSegment(_ s: String) -> Bool {
        !s.isEmpty
            && s.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F
                    || c == 0x2D || c == 0x24
            }
    }

    /// The text with every placeholder replaced from `document`; `missing` lists the paths
    /// (dotted) that had no value, in order, once each.
    public func render(_ document: JSONValue, missing: inout [String]) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .text(let t): out += t
            case .value(let path):
                switch WorkflowPaths.lookup(path, in: document) {
                case nil, .null?:
                    let dotted = path.joined(separator: ".")
                    if !missing.contains(dotted) { missing.append(dotted) }
                case .string(let s)?: out += s
                case let value?: out += value.jsonString
                }
            }
        }
        return out
    }

    /// Renders every string in `value` (objects walked in key order, arrays in order; keys left as they are).
    /// Strings that do not parse as templates are left as written (validation refused them at save).
    public static func render(_ value: JSONValue, _ document: JSONValue, missing: inout [String]) -> JSONValue {
        switch value {
        case .string(let s):
            guard hasPlaceholder(s), case .success(let template) = parse(s) else { return value }
            return .string(template.render(document, missing: &missing))
        case .array(let items):
            return .array(items.map { render($0, document, missing: &missing) })
        case .object(let members):
            var out: [String: JSONValue] = [:]
            // Keys in order, so `missing` comes out the same on every run.
            for key in members.keys.sorted() { out[key] = render(members[key]!, document, missing: &missing) }
            return .object(out)
        default:
            return value
        }
    }
}

/// Why a template was refused: the message and the 1-based character where the placeholder starts.
public struct WorkflowTemplateError: Error, Sendable, Hashable {
    public var message: String
    public var column: Int
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\n" || f == "\r" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\n" || l == "\r" { s = s.dropLast() }
        return String(s)
    }
}
