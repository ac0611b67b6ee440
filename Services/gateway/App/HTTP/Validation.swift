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
            if requireBody { issues.append(ValidationIssue(path: prefix.isEmpty ? "body" : String(prefix.dropLast()), message: "is required")) }
        default:
            self.object = [:]
            issues.append(ValidationIssue(path: prefix.isEmpty ? "body" : String(prefix.dropLast()), message: "must be a JSON object"))
        }
    }

    mutating func add(_ path: String, _ message: String) {
        issues.append(ValidationIssue(path: prefix + path, message: message))
    }

    mutating func merge(_ other: Validator) { issues += other.issues }

    /// Whether the field is present (even as null).
    func has(_ name: String) -> Bool { object[name] != nil }
    func isNull(_ name: String) -> Bool { object[name]?.isNull ?? false }

    /// A string field. Absent or null: nil (and an issue when `required`).
    mutating func string(_ name: String, required: Bool = false, maxLength: Int = 256,
                         check: ((String) -> String?)? = nil) -> String? {
        guard let value = object[name], !value.isNull else {
            if required { add(name, "is required") }
            return nil
        }
        guard let text = value.stringValue else {
            add(name, "must be a string")
            return nil
        }
        if text.isEmpty {
            add(name, "must not be empty")
            return nil
        }
        if text.count > maxLength {
            add(name, "must be at most \(maxLength) characters")
            return nil
        }
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
        string(name, required: required, maxLength: 64) { value in
            allowed.contains(value) ? nil : "must be one of: " + allowed.joined(separator: ", ")
        }
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

/// The checks fields share across routes. Each returns nil when the value is fine, else the problem.
enum FieldRules {
    static func timezone(_ value: String) -> String? {
        TimeZone(identifier: value) == nil ? "must be an IANA time zone name such as Europe/Berlin" : nil
    }

    /// A BCP 47 tag as apps report it: a 2-3 letter language, then 1-8 letter-or-digit subtags,
    /// separated by `-` (or `_`, as iOS writes them). Checked byte by byte: it runs on every
    /// subscriber and device write (splitting into substrings and asking Unicode about each
    /// character took 2 µs).
    static func locale(_ value: String) -> String? {
        var subtags = 0
        var length = 0
        var lettersOnly = true
        for byte in value.utf8 {
            if byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") {
                guard isLocaleSubtag(subtag: subtags, length: length, lettersOnly: lettersOnly) else { return localeProblem }
                subtags += 1
                length = 0
                lettersOnly = true
            } else if isASCIILetter(byte) {
                length += 1
            } else if byte >= 0x30 && byte <= 0x39 {
                length += 1
                lettersOnly = false
            } else {
                return localeProblem
            }
        }
        return isLocaleSubtag(subtag: subtags, length: length, lettersOnly: lettersOnly) ? nil : localeProblem
    }

    private static let localeProblem = "must be a BCP 47 language tag such as en-US"

    private static func isLocaleSubtag(subtag: Int, length: Int, lettersOnly: Bool) -> Bool {
        subtag == 0 ? (2...3).contains(length) && lettersOnly : (1...8).contains(length)
    }

    static func isASCIILetter(_ c: UInt8) -> Bool { (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) }

    /// Caller-chosen ids (subscribers, anonymous ids): 1-256 characters, no control characters.
    /// ASCII ids (the usual case) are checked byte by byte; others by Unicode category (Cc).
    static func identifier(_ value: String) -> String? {
        var ascii = true
        for byte in value.utf8 {
            if byte >= 0x80 { ascii = false; break }
            if byte < 0x20 || byte == 0x7F { return "must not contain control characters" }
        }
        if ascii { return nil }
        return value.unicodeScalars.contains { $0.properties.generalCategory == .control }
            ? "must not contain control characters" : nil
    }

    /// Topic keys: 1-128 of `A-Z a-z 0-9 _ - . :`.
    static func topicKey(_ value: String) -> String? {
        value.utf8.allSatisfy { isKeyCharacter($0) } ? nil : "may only contain letters, digits, _ - . :"
    }

    /// An APNs device token: hex, 64 to 200 characters (Apple's tokens are 64 today, may grow).
    static func deviceToken(_ value: String) -> String? {
        guard (64...200).contains(value.utf8.count), value.count % 2 == 0 else {
            return "must be 64 to 200 hexadecimal characters (an APNs device token)"
        }
        return value.utf8.allSatisfy(isHex) ? nil : "must be hexadecimal (an APNs device token)"
    }

    /// Local wall-clock time `HH:MM`.
    static func wallClock(_ value: String) -> String? {
        let parts = value.split(separator: ":")
        guard value.utf8.count == 5, parts.count == 2, let h = Int(parts[0]), let m = Int(parts[1]),
              (0...23).contains(h), (0...59).contains(m)
        else { return "must be a local time HH:MM (00:00 to 23:59)" }
        return nil
    }

    static func bundleID(_ value: String) -> String? {
        let ok = value.utf8.allSatisfy { isKeyCharacter($0) && $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: "_") }
            && value.contains(".")
        return ok ? nil : "must be a bundle identifier such as com.example.app"
    }

    /// Apple team and key ids: 10 upper-case letters or digits.
    static func appleID(_ value: String) -> String? {
        value.utf8.count == 10 && value.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) }
            ? nil : "must be 10 upper-case letters or digits"
    }

    static func isHex(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)
    }

    static func isKeyCharacter(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
            || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: ":")
    }
}

