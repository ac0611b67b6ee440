import BuzzKitWire
import Foundation

/// Reads a JSON object field by field and collects EVERY problem, so a `422 validation_failed`
/// lists all of them at once in `details` (`[{path, message}]`), not the first one only.
///
/// Unknown fields are problems too (a typo is better refused than silently ignored).
struct Validator {
    private(set) var issues: [ValidationIssue] = []
    let object: [String: JSONValue]
    let prefix: String

    /// - Parameters:
    ///   - body: the parsed body (nil when empty).
    ///   - allowed: the field names this object may have.
    init(_ body: JSONValue?, allowed: Set<String>, prefix: String = "", requireBody: Bool = true) {
        self.prefix = prefix
        switch body {
        case .object(let object):
            self.object = object
            for name in object.keys.sorted() where !allowed.contains(name) {
                issues.append(ValidationIssue(path: prefix + name, message: "is not a known field"))
            }
        case nil:
            self.object = [:]
            if requireBody {
                issues.append(
                    ValidationIssue(path: prefix.isEmpty ? "body" : String(prefix.dropLast()), message: "is required"))
            }
        default:
            self.object = [:]
            issues.append(
                ValidationIssue(
                    path: prefix.isEmpty ? "body" : String(prefix.dropLast()), message: "must be a JSON object"))
        }
    }

    mutating func add(_ path: String, _ message: String) {
        issues.append(ValidationIssue(path: prefix + path, message: message))
    }

    mutating func merge(_ other: Validator) { issues += other.issues }

    /// Whether the field is present (even as null).
    func has(_ name: String) -> Bool { object[name] != nil }
    func isNull(_ name: String) -> Bool { object[name]?.isNull ?? false }

    /// A string field checked against `rule` (the rule the OpenAPI document states for it).
    /// Absent or null: nil (and an issue when `required`).
    mutating func string(_ name: String, required: Bool = false, rule: TextRule) -> String? {
        guard let value = object[name], !value.isNull else {
            if required { add(name, "is required") }
            return nil
        }
        guard let text = value.stringValue else {
            add(name, "must be a string")
            return nil
        }
        if let problem = rule.problem(with: text) {
            add(name, problem)
            return nil
        }
        return text
    }

    /// A PATCH's nullable string field: nil when absent (unchanged), `.some(nil)` when null
    /// (cleared), else the value checked against `rule`.
    mutating func patchString(_ name: String, rule: TextRule) -> String?? {
        guard has(name) else { return nil }
        return isNull(name) ? .some(nil) : .some(string(name, rule: rule))
    }

    /// A string field of `1...maxLength` characters, then `check` (nil: fine, else the problem).
    /// Prefer `string(_:required:rule:)`: a `TextRule` is what the document states as well.
    mutating func string(
        _ name: String, required: Bool = false, maxLength: Int = 256,
        check: ((String) -> String?)? = nil
    ) -> String? {
        guard let text = string(name, required: required, rule: .length(1, maxLength)) else { return nil }
        if let check, let problem = check(text) {
            add(name, problem)
            return nil
        }
        return text
    }

    mutating func object(_ name: String, required: Bool = false) -> JSONValue? {
        guard let value = object[name], !value.isNull else {
            if required { add(name, "is required") }
            return nil
        }
        guard value.objectValue != nil else {
            add(name, "must be an object")
            return nil
        }
        return value
    }

    mutating func bool(_ name: String) -> Bool? {
        guard let value = object[name], !value.isNull else { return nil }
        guard let bool = value.boolValue else {
            add(name, "must be true or false")
            return nil
        }
        return bool
    }

    mutating func oneOf(_ name: String, _ allowed: [String], required: Bool = false) -> String? {
        string(name, required: required, rule: .oneOf(allowed))
    }

    /// Throws `422 validation_failed` with every issue when there is any.
    func check() throws(APIError) {
        try Self.throwIfAny(issues)
    }

    static func throwIfAny(_ issues: [ValidationIssue]) throws(APIError) {
        guard !issues.isEmpty else { return }
        let summary = issues.count == 1 ? "1 field is invalid" : "\(issues.count) fields are invalid"
        throw ValidationIssue.apiError(issues, message: "the request is invalid: \(summary)")
    }
}

/// The rules fields share across routes, each a `TextRule`: the validators check values with it
/// and the OpenAPI document's schemas are built from it. The functions return nil when a value
/// is fine, else the problem.
enum FieldRules {
    /// IANA time zone names (`TimeZoneNames`: the system's zone files, not only Foundation's list).
    static let timezoneNames: [String] = TimeZoneNames.all
    static let timezoneRule = TextRule(
        maxLength: timezoneNames.map { $0.unicodeScalars.count }.max() ?? 64, pattern: nil,
        problem: "must be an IANA time zone name such as Europe/Berlin"
    ) {
        TimeZoneNames.isKnown($0)
    }

    static func timezone(_ value: String) -> String? { timezoneRule.problem(with: value) }

    /// A BCP 47 tag as apps report it: a 2-3 letter language, then 1-8 letter-or-digit subtags,
    /// separated by `-` (or `_`, as iOS writes them), at most 35 characters. Checked byte by byte:
    /// it runs on every subscriber and device write (splitting into substrings and asking
    /// Unicode about each character took 2 µs).
    static let localeRule = TextRule(
        maxLength: 35, pattern: "^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$",
        problem: localeProblem, accepts: isLocale)

    static func locale(_ value: String) -> String? { localeRule.matchesPattern(value) ? nil : localeProblem }

    private static func isLocale(_ value: String) -> Bool {
        var subtags = 0
        var length = 0
        var lettersOnly = true
        for byte in value.utf8 {
            if byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") {
                guard isLocaleSubtag(subtag: subtags, length: length, lettersOnly: lettersOnly) else { return false }
                subtags += 1
                length = 0
                lettersOnly = true
            } else if isASCIILetter(byte) {
                length += 1
            } else if byte >= 0x30 && byte <= 0x39 {
                length += 1
                lettersOnly = false
            } else {
                return false
            }
        }
        return isLocaleSubtag(subtag: subtags, length: length, lettersOnly: lettersOnly)
    }

    private static let localeProblem = "must be a BCP 47 language tag such as en-US"

    private static func isLocaleSubtag(subtag: Int, length: Int, lettersOnly: Bool) -> Bool {
        subtag == 0 ? (2...3).contains(length) && lettersOnly : (1...8).contains(length)
    }

    static func isASCIILetter(_ c: UInt8) -> Bool { (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) }

    /// Caller-chosen ids (subscribers, anonymous ids): 1-256 characters, no control characters
    /// (C0, DEL, C1).
    static let identifierRule = TextRule.noControlCharacters(1, 256)

    static func identifier(_ value: String) -> String? { identifierRule.problem(with: value) }

    /// An installation's anonymous id: an identifier of at most 128 characters and 128 bytes of
    /// UTF-8 (what its column holds).
    static let installationAnonymousIDRule = TextRule.noControlCharacters(1, 128).limited(toUTF8Bytes: 128)

    /// Topic and segment keys: 1-128 of `A-Z a-z 0-9 _ - . :`.
    static let keyRule = TextRule.characters(
        ASCIIClass(
            ASCIIClass.upper + ASCIIClass.lower + ASCIIClass.digits
                + ASCIIClass.chars("_-.:")), 1, 128,
        problem: "may only contain letters, digits, _ - . :")

    static func topicKey(_ value: String) -> String? { keyRule.problem(with: value) }

    /// An APNs device token: hex, an even 64 to 200 characters (Apple's tokens are 64 today, may grow).
    static let deviceTokenRule = TextRule(
        minLength: 64, maxLength: 200, pattern: "^(?:[0-9A-Fa-f]{2})*$",
        problem: "must be 64 to 200 hexadecimal characters (an APNs device token)"
    ) {
        $0.utf8.count % 2 == 0 && $0.utf8.allSatisfy(isHex)
    }

    static func deviceToken(_ value: String) -> String? {
        guard deviceTokenRule.problem(with: value) != nil else { return nil }
        let lengthFits = (64...200).contains(value.utf8.count) && value.utf8.count % 2 == 0
        return lengthFits ? "must be hexadecimal (an APNs device token)" : deviceTokenRule.problem
    }

    /// Local wall-clock time `HH:MM`, 00:00 to 23:59.
    static let wallClockRule = TextRule(
        minLength: 5, maxLength: 5, pattern: "^(?:[01][0-9]|2[0-3]):[0-5][0-9]$",
        problem: "must be a local time HH:MM (00:00 to 23:59)"
    ) { value in
        let b = Array(value.utf8)
        func digit(_ c: UInt8) -> Int? { c >= 0x30 && c <= 0x39 ? Int(c - 0x30) : nil }
        guard b.count == 5, b[2] == UInt8(ascii: ":"), let h1 = digit(b[0]), let h2 = digit(b[1]), let m1 = digit(b[3]),
            digit(b[4]) != nil
        else { return false }
        return h1 * 10 + h2 <= 23 && m1 <= 5
    }

    static func wallClock(_ value: String) -> String? {
        wallClockRule.problem(with: value).map { _ in wallClockRule.problem }
    }

    /// A bundle identifier: letters, digits, `-` and `.`, with at least one `.`; 1-255 characters.
    static let bundleIDRule = TextRule(
        maxLength: 255, pattern: #"^[A-Za-z0-9-]*\.[A-Za-z0-9.-]*$"#,
        problem: "must be a bundle identifier such as com.example.app"
    ) { value in
        value.utf8.allSatisfy { isKeyCharacter($0) && $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: "_") }
            && value.utf8.contains(UInt8(ascii: "."))
    }

    static func bundleID(_ value: String) -> String? { bundleIDRule.problem(with: value) }

    /// Apple team and key ids: 10 upper-case letters or digits.
    static let appleIDRule = TextRule.characters(
        ASCIIClass(ASCIIClass.upper + ASCIIClass.digits), 10, 10,
        problem: "must be 10 upper-case letters or digits")

    static func appleID(_ value: String) -> String? {
        appleIDRule.problem(with: value).map { _ in appleIDRule.problem }
    }

    /// A version number in a path: 1 to 2147483647 in decimal, no sign, no leading zero.
    static let versionRule = TextRule(
        maxLength: 10,
        pattern: "^(?:[1-9][0-9]{0,8}|1[0-9]{9}|20[0-9]{8}|21[0-3][0-9]{7}|214[0-6][0-9]{6}"
            + "|2147[0-3][0-9]{5}|21474[0-7][0-9]{4}|214748[0-2][0-9]{3}|2147483[0-5][0-9]{2}"
            + "|21474836[0-3][0-9]|214748364[0-7])$",
        problem: "must be a version number from 1 to 2147483647"
    ) { text in
        guard let first = text.utf8.first, first != UInt8(ascii: "0"),
            text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let n = Int(text)
        else { return false }
        return n <= Int(Int32.max)
    }

    /// Names people give things (tenants, keys, topics, segments): 1-200 characters.
    static let nameRule = TextRule.length(1, 200)
    /// An app version as the app reports it: 1-64 characters.
    static let appVersionRule = TextRule.length(1, 64)
    /// The `.p8` key's PEM text (checked further by parsing it as an EC P-256 private key).
    static let privateKeyRule = TextRule.length(1, 10_000)

    static func isHex(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)
    }

    static func isKeyCharacter(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
            || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: ":")
    }
}
