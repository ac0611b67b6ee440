/// PostgreSQL array literals (`{"a","b c",NULL}`), one dimension.
enum PostgresArrayLiteral {
    /// Every element double-quoted with `"` and `\` escaped; `nil` elements are bare `NULL`.
    static func format(_ elements: [String?]) -> String {
        var literal = PostgresArrayText()
        for element in elements { literal.append(element) }
        return String(decoding: literal.value.bytes ?? [], as: UTF8.self)
    }

    /// The element texts (`nil` for NULL), or `nil` when this is not a one-dimensional literal.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> [[UInt8]?]? {
        guard let flat = PostgresFlatArray(parsing: bytes) else { return nil }
        return (0..<flat.count).map { index in flat.isNull(index) ? nil : Array(flat.bytes[flat.range(index)]) }
    }
}

/// A one-dimensional array literal's elements unescaped into ONE buffer, with where each ends:
/// reading an array of n elements costs two allocations instead of n + 1 (a batch of webhook
/// deliveries reads five such arrays of 100 per request).
public struct PostgresFlatArray: Sendable, PostgresDecodable {
    /// Every element's bytes, one after the other.
    public private(set) var bytes: [UInt8] = []
    /// Where each element ends in `bytes`; negative (-end - 1) for a NULL element.
    private var ends: [Int] = []

    public var count: Int { ends.count }

    public func isNull(_ index: Int) -> Bool { ends[index] < 0 }

    /// The element's range in `bytes` (empty for NULL).
    public func range(_ index: Int) -> Range<Int> {
        let start = index == 0 ? 0 : Self.end(ends[index - 1])
        return start..<Self.end(ends[index])
    }

    private static func end(_ stored: Int) -> Int { stored < 0 ? -stored - 1 : stored }

    public static func decode(from cell: PostgresCell) throws -> PostgresFlatArray {
        guard let flat = PostgresFlatArray(parsing: try cell.require(PostgresFlatArray.self)) else {
            throw PostgresDecodingError.typeMismatch(PostgresFlatArray.self)
        }
        return flat
    }

    /// Parses `{a,"b c",NULL}` (an explicit dimension decoration is skipped); nil when this is not
    /// a one-dimensional literal.
    init?(parsing bytes: UnsafeRawBufferPointer) {
        var i = 0
        // Skip an explicit dimension decoration: `[1:3]={...}`.
        if bytes.first == UInt8(ascii: "[") {
            while i < bytes.count, bytes[i] != UInt8(ascii: "=") { i += 1 }
            i += 1
        }
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return nil }
        i += 1
        let end = bytes.count - 1
        self.bytes.reserveCapacity(end - i)
        if i == end { return }
        while i < end {
            while i < end, bytes[i] == UInt8(ascii: " ") { i += 1 }
            if bytes[i] == UInt8(ascii: "{") { return nil }  // nested: not supported
            let start = self.bytes.count
            if bytes[i] == UInt8(ascii: "\"") {
                i += 1
                var closed = false
                while i < end {
                    let c = bytes[i]
                    if c == UInt8(ascii: "\\"), i + 1 < end {
                        self.bytes.append(bytes[i + 1])
                        i += 2
                    } else if c == UInt8(ascii: "\"") {
                        i += 1
                        closed = true
                        break
                    } else {
                        self.bytes.append(c)
                        i += 1
                    }
                }
                guard closed else { return nil }
                while i < end, bytes[i] == UInt8(ascii: " ") { i += 1 }
                ends.append(self.bytes.count)
            } else {
                while i < end, bytes[i] != UInt8(ascii: ",") {
                    if bytes[i] == UInt8(ascii: "\\"), i + 1 < end { i += 1 }
                    self.bytes.append(bytes[i])
                    i += 1
                }
                while self.bytes.count > start, self.bytes.last == UInt8(ascii: " ") { self.bytes.removeLast() }
                let element = self.bytes[start...]
                if element.count == 4, element.elementsEqual("NULL".utf8, by: { $0 & 0xDF == $1 }) {
                    self.bytes.removeLast(4)
                    ends.append(-start - 1)
                } else {
                    ends.append(self.bytes.count)
                }
            }
            if i < end {
                guard bytes[i] == UInt8(ascii: ","), i + 1 < end else { return nil }  // a trailing comma
                i += 1
            }
        }
    }
}
