/// An ordered list of HTTP header fields with case-insensitive lookup, for the HTTP server and the
/// HTTP client alike.
///
/// Why a list and not a dictionary: a name may repeat (`set-cookie`, `vary`), and the order the
/// fields arrived in (or are to be sent in) is kept, names as written. Lookups compare names ASCII
/// case-insensitively, so `headers["Content-Type"]` finds `content-type` (HTTP/2 sends lower-case
/// names). The subscript joins repeated fields with ", ", as RFC 9110 allows for list-valued
/// fields; `values(for:)` gives them one by one.
///
/// Cost: the server builds one per request from libmicrohttpd's fields (`init(fields:)` keeps the
/// array as it is) and the gateway reads a few fields of it on every request; a lookup is one pass
/// over the fields comparing bytes, with no allocation unless a field repeats.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One field as received or to be sent.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public private(set) var fields: [Field]

    public init() { fields = [] }

    /// The fields as they are, in order.
    public init(fields: [Field]) { self.fields = fields }

    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }

    /// The value of the field `name` (any case), repeated fields joined with ", "; nil when absent.
    public subscript(name: String) -> String? {
        var result: String?
        for field in fields where Self.equalNames(field.name, name) {
            if let existing = result { result = existing + ", " + field.value } else { result = field.value }
        }
        return result
    }

    /// Every value of the field `name` (any case), in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.equalNames($0.name, name) }.map(\.value)
    }

    public func contains(name: String) -> Bool {
        fields.contains { Self.equalNames($0.name, name) }
    }

    /// Makes room for `count` fields in all (a list filled field by field, such as a response's).
    public mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// Appends a field, keeping any earlier field of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field of this name (any case) by one field, or removes them all when `value`
    /// is nil.
    public mutating func replaceOrAdd(name: String, value: String?) {
        fields.removeAll { Self.equalNames($0.name, name) }
        if let value { fields.append(Field(name: name, value: value)) }
    }

    public mutating func remove(name: String) {
        fields.removeAll { Self.equalNames($0.name, name) }
    }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// `value` without the optional whitespace around it (spaces and tabs: RFC 9110's OWS, which
    /// is all a field value may be padded with). Byte-level, and `value` itself when there is
    /// nothing to trim: it runs on every request.
    public static func trimmingWhitespace(_ value: String) -> String {
        let utf8 = value.utf8
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        guard let first = utf8.first, let last = utf8.last, isSpace(first) || isSpace(last) else { return value }
        guard let start = utf8.firstIndex(where: { !isSpace($0) }), let end = utf8.lastIndex(where: { !isSpace($0) })
        else {
            return ""
        }
        return String(Substring(utf8[start...end]))
    }

    /// Whether two field names are equal ignoring ASCII case (names are ASCII tokens).
    public static func equalNames(_ a: String, _ b: String) -> Bool {
        let x = a.utf8
        let y = b.utf8
        guard x.count == y.count else { return false }
        // Over the bytes in place when both have them (native and small strings do): the generic
        // pairing of two UTF-8 views cost more than the lookups it served.
        let fast = x.withContiguousStorageIfAvailable { p in
            y.withContiguousStorageIfAvailable { q in equalNames(p, q) }
        }
        if let fast, let equal = fast { return equal }
        return equalNames(x, y)
    }

    private static func equalNames(_ x: some Sequence<UInt8>, _ y: some Sequence<UInt8>) -> Bool {
        for (p, q) in zip(x, y) where p != q {
            // ASCII letters differ by 0x20 between cases; header names are ASCII tokens.
            guard p | 0x20 == q | 0x20, (p | 0x20) >= 0x61, (p | 0x20) <= 0x7A else { return false }
        }
        return true
    }
}
