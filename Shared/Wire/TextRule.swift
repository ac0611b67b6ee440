/// A rule a text value obeys, stated once: the code that checks a value and the OpenAPI document
/// that describes it are both built from it, so what the document promises is what is enforced.
///
/// Lengths count Unicode scalars (code points), as JSON Schema's `minLength` and `maxLength` do.
/// `pattern` is the rule as an ECMA-262 regular expression (what OpenAPI documents carry) and
/// `accepts` the same rule as plain Swift (byte loops: these run on every request); for rules
/// built from a character class both come from the one class, and a test holds every rule's
/// two forms equal on generated input (`TextRuleTests`).
public struct TextRule: Sendable {
    /// At least this many code points (default 1: BuzzKit refuses empty strings everywhere).
    public var minLength: Int
    /// At most this many code points.
    public var maxLength: Int
    /// Anchored ECMA-262 pattern the whole value matches, nil when the length is the only rule.
    public var pattern: String?
    /// The JSON Schema format (`uuid`), or nil.
    public var format: String?
    /// At most this many bytes of UTF-8 as well, where a column or APNs counts bytes (JSON
    /// Schema cannot say it: the document carries it as `x-max-utf8-bytes`).
    public var maxUTF8Bytes: Int?
    /// What a refused value is told (after the length checks): "may only contain letters, digits, ...".
    public var problem: String
    private let test: @Sendable (String) -> Bool

    public init(
        minLength: Int = 1, maxLength: Int, pattern: String?, format: String? = nil, problem: String,
        accepts test: @escaping @Sendable (String) -> Bool
    ) {
        self.minLength = minLength
        self.maxLength = maxLength
        self.pattern = pattern
        self.format = format
        self.problem = problem
        self.test = test
    }

    /// Any text of `minLength...maxLength` code points but U+0000 (PostgreSQL cannot store it).
    public static func length(_ minLength: Int = 1, _ maxLength: Int) -> TextRule {
        TextRule(
            minLength: minLength, maxLength: maxLength, pattern: #"^[^\x00]*$"#,
            problem: "must not contain U+0000 (NUL)"
        ) { !$0.utf8.contains(0) }
    }

    /// Text of characters from `allowed` only (ASCII): the pattern is the class, the check a byte loop over it.
    public static func characters(
        _ allowed: ASCIIClass, _ minLength: Int = 1, _ maxLength: Int,
        problem: String
    ) -> TextRule {
        TextRule(minLength: minLength, maxLength: maxLength, pattern: "^[\(allowed.regexClass)]*$", problem: problem) {
            $0.utf8.allSatisfy(allowed.contains)
        }
    }

    /// Text with no control characters: C0 and DEL, plus C1 (U+0080 to U+009F) when `c1`.
    public static func noControlCharacters(_ minLength: Int = 1, _ maxLength: Int, c1: Bool = true) -> TextRule {
        let pattern = c1 ? #"^[^\x00-\x1F\x7F-\x9F]*$"# : #"^[^\x00-\x1F\x7F]*$"#
        return TextRule(
            minLength: minLength, maxLength: maxLength, pattern: pattern,
            problem: "must not contain control characters"
        ) { value in
            var ascii = true
            for byte in value.utf8 {
                if byte >= 0x80 {
                    ascii = false
                    break
                }
                if byte < 0x20 || byte == 0x7F { return false }
            }
            if ascii { return true }
            return !value.unicodeScalars.contains {
                $0.value < 0x20 || $0.value == 0x7F || (c1 && (0x80...0x9F).contains($0.value))
            }
        }
    }

    /// A value of `values` only (the document lists them as an `enum`).
    public static func oneOf(_ values: [String]) -> TextRule {
        let set = Set(values)
        return TextRule(
            minLength: 1, maxLength: values.map { $0.unicodeScalars.count }.max() ?? 1, pattern: nil,
            problem: "must be one of: " + values.joined(separator: ", ")
        ) { set.contains($0) }
    }

    /// A UUID in its 36-character `8-4-4-4-12` form, either case.
    public static let uuid = TextRule(
        minLength: 36, maxLength: 36,
        pattern: "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$", format: "uuid",
        problem: "must be a UUID"
    ) { UUIDTextShape.matches($0) }

    /// Nil when `value` obeys the rule, else what is wrong: empty, too long, too short, or `problem`.
    public func problem(with value: String) -> String? {
        if value.isEmpty && minLength > 0 { return "must not be empty" }
        // Code points, as JSON Schema counts; UTF-8 bytes bound them from above (cheap for ASCII).
        if value.utf8.count > maxLength && value.unicodeScalars.count > maxLength {
            return "must be at most \(maxLength) characters"
        }
        if minLength > 1 && value.unicodeScalars.count < minLength { return "must be at least \(minLength) characters" }
        if let maxUTF8Bytes, value.utf8.count > maxUTF8Bytes { return "must be at most \(maxUTF8Bytes) bytes of UTF-8" }
        return test(value) ? nil : problem
    }

    /// The same rule, also limited to `bytes` of UTF-8.
    public func limited(toUTF8Bytes bytes: Int) -> TextRule {
        var rule = self
        rule.maxUTF8Bytes = bytes
        return rule
    }

    /// Whether `value` obeys the rule.
    public func accepts(_ value: String) -> Bool { problem(with: value) == nil }

    /// The check without the lengths (the pattern's half), for the test that holds it to `pattern`.
    public func matchesPattern(_ value: String) -> Bool { test(value) }
}

/// A set of ASCII characters, written as closed ranges: a rule's character class and its byte check.
public struct ASCIIClass: Sendable {
    public var ranges: [ClosedRange<UInt8>]

    public init(_ ranges: [ClosedRange<UInt8>]) { self.ranges = ranges }

    public static func chars(_ text: String) -> [ClosedRange<UInt8>] { text.utf8.map { $0...$0 } }

    public static let digits: [ClosedRange<UInt8>] = [0x30...0x39]
    public static let upper: [ClosedRange<UInt8>] = [0x41...0x5A]
    public static let lower: [ClosedRange<UInt8>] = [0x61...0x7A]
    public static let hexLetters: [ClosedRange<UInt8>] = [0x41...0x46, 0x61...0x66]

    public func contains(_ byte: UInt8) -> Bool { ranges.contains { $0.contains(byte) } }

    /// The inside of a regular-expression class: letters and digits as they are, anything else as `\xHH`.
    public var regexClass: String {
        ranges.map { range in
            range.lowerBound == range.upperBound
                ? Self.escape(range.lowerBound) : Self.escape(range.lowerBound) + "-" + Self.escape(range.upperBound)
        }.joined()
    }

    private static func escape(_ byte: UInt8) -> String {
        let alnum = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        if alnum { return String(UnicodeScalar(byte)) }
        let hex = Array("0123456789ABCDEF")
        return "\\x" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0xF)])
    }
}

/// The shape `UUID(uuidText:)` parses, without building the UUID.
enum UUIDTextShape {
    static func matches(_ text: String) -> Bool {
        guard text.utf8.count == 36 else { return false }
        for (position, byte) in text.utf8.enumerated() {
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else if Hex.value(of: byte) == nil {
                return false
            }
        }
        return true
    }
}
