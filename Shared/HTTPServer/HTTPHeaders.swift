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
