import BuzzKitWire
import Foundation

extension JSONValue {
    /// The value as a property list (what `userInfo` must be): like `anyValue`, with JSON nulls
    /// left out of objects and arrays (a property list has no null). Nil for a bare null.
    public var propertyList: Any? {
        switch self {
        case .null: return nil
        case .bool(let b): return b
        case .int(let i): return NSNumber(value: i)
        case .double(let d): return d
        case .string(let s): return s
        case .array(let a): return a.compactMap(\.propertyList)
        case .object(let o): return o.compactMapValues(\.propertyList)
        }
    }
}
