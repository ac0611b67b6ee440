import BuzzKitPostgres
import Foundation

/// One per-delivery column of the record statement that is sent as ONE value when every delivery
/// of the write has the same (the usual fan-out chunk: one message, one environment, every device
/// `sent` at its first attempt, no error): then its array parameter is empty, `unnest` pads it
/// with NULLs, and the statement puts `uniform` in their place (`coalesce(u.column, $n)`).
/// Postgres parses one value instead of one per delivery (`array_in` was a twelfth of its CPU in
/// the fan-out). When the values differ, the array holds them all and `uniform` is NULL, so the
/// `coalesce` keeps each (a NULL element too).
struct CollapsibleColumn<Element: CollapsibleElement> {
    private var text: PostgresArrayText
    private var first: Element?
    private var count = 0
    private var collapsed = true

    init(capacity: Int = 256) {
        text = PostgresArrayText(capacity: capacity)
    }

    mutating func append(_ value: Element?) {
        defer { count += 1 }
        guard collapsed else { return Element.append(value, to: &text) }
        if count == 0 {
            first = value
        } else if value != first {
            // The first differing value: every element so far was `first`.
            collapsed = false
            for _ in 0..<count { Element.append(first, to: &text) }
            Element.append(value, to: &text)
        }
    }

    /// The array parameter: empty when collapsed.
    var array: PostgresValue { text.value }

    /// The value every element has when collapsed; nil (NULL) otherwise.
    var uniform: Element? { collapsed ? first : nil }
}

/// A value a `CollapsibleColumn` holds: written into an array literal, and a parameter of its own.
protocol CollapsibleElement: Equatable, PostgresEncodable {
    static func append(_ value: Self?, to text: inout PostgresArrayText)
}

extension Int: CollapsibleElement {
    static func append(_ value: Int?, to text: inout PostgresArrayText) { text.append(value) }
}

extension String: CollapsibleElement {
    static func append(_ value: String?, to text: inout PostgresArrayText) { text.append(value) }
}

extension UUID: CollapsibleElement {
    static func append(_ value: UUID?, to text: inout PostgresArrayText) {
        if let value { text.append(value) } else { text.appendNull() }
    }
}
