/// A one-dimensional array literal's elements in ONE buffer, with where each ends: reading an
/// array of n elements keeps two allocations instead of n + 1 (a batch of webhook deliveries reads
/// five such arrays of 100 per request, and writes each element out as it is).
public struct PostgresFlatArray: Sendable, PostgresDecodable {
    /// Every element's bytes, unescaped, one after the other.
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
        let literal = try cell.require(PostgresFlatArray.self)
        var flat = PostgresFlatArray()
        flat.bytes.reserveCapacity(literal.count)
        let parsed = PostgresArrayLiteral.forEachElement(literal) { element in
            if let element {
                flat.bytes.append(contentsOf: element)
                flat.ends.append(flat.bytes.count)
            } else {
                flat.ends.append(-flat.bytes.count - 1)
            }
        }
        guard parsed else { throw PostgresDecodingError.typeMismatch(PostgresFlatArray.self) }
        return flat
    }
}
