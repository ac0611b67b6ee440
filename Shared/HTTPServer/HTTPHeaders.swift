/// HTTP header fields with case-insensitive lookup.
///
/// Keeps the fields in arrival order (names as sent); `headers["content-type"]` and
/// `headers["Content-Type"]` find the same field. Repeated fields are joined with ", " on lookup,
/// as RFC 9110 allows for list-valued fields.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)]

    public init() { fields = [] }

    public init(_ fields: [(name: String, value: String)]) { self.fields = fields }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The value of the field `name` (any case), repeated fields joined with ", "; nil when absent.
    public subscript(name: String) -> String? {
        var result: String?
        for field in fields where Self.equalIgnoringCase(field.name, name) {
            if let existing = result { result = existing + ", " + field.value } else { result = field.value }
        }
        return result
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { Self.equalIgnoringCase($0.name, name) }
    }

    /// Appends a field (keeps any existing field of the same name).
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field named `name` (any case) with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name: name, value: value))
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { Self.equalIgnoringCase($0.name, name) }
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// `value` without the optional whitespace around it (spaces and tabs: RFC 9110's OWS, which
    /// is all a field value may be padded with). Byte-level, and `value` itself when there is
    /// nothing to trim: it runs on every request.
    public static func trimmingWhitespace(_ value: String) -> String {
        let utf8 = value.utf8
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        guard let first = utf8.first, let last = utf8.last, isSpace(first) || isSpace(last) else { return value }
        guard let start = utf8.firstIndex(where: { !isSpace($0) }), let end = utf8.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(Substring(utf8[start...end]))
    }

    static func equalIgnoringCase(_ a: String, _ b: String) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        for (p, q) in zip(x, y) where p != q {
            // ASCII case folding is enough: header names are tokens.
            guard p | 0x20 == q | 0x20, (p | 0x20) >= 0x61, (p | 0x20) <= 0x7A else { return false }
        }
        return true
    }
}
