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
        var i = 0
        // Skip an explicit dimension decoration: `[1:3]={...}`.
        if bytes.first == UInt8(ascii: "[") {
            while i < bytes.count, bytes[i] != UInt8(ascii: "=") { i += 1 }
            i += 1
        }
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return nil }
        i += 1
        let end = bytes.count - 1
        var elements: [[UInt8]?] = []
        if i == end { return elements }
        while i < end {
            while i < end, bytes[i] == UInt8(ascii: " ") { i += 1 }
            if bytes[i] == UInt8(ascii: "{") { return nil }  // nested: not supported
            var element: [UInt8] = []
            if bytes[i] == UInt8(ascii: "\"") {
                i += 1
                var closed = false
                while i < end {
                    let c = bytes[i]
                    if c == UInt8(ascii: "\\"), i + 1 < end {
                        element.append(bytes[i + 1])
                        i += 2
                    } else if c == UInt8(ascii: "\"") {
                        i += 1
                        closed = true
                        break
                    } else {
                        element.append(c)
                        i += 1
                    }
                }
                guard closed else { return nil }
                while i < end, bytes[i] == UInt8(ascii: " ") { i += 1 }
                elements.append(element)
            } else {
                while i < end, bytes[i] != UInt8(ascii: ",") {
                    if bytes[i] == UInt8(ascii: "\\"), i + 1 < end { i += 1 }
                    element.append(bytes[i])
                    i += 1
                }
                while element.last == UInt8(ascii: " ") { element.removeLast() }
                let isNull = element.count == 4 && String(decoding: element, as: UTF8.self).uppercased() == "NULL"
                elements.append(isNull ? nil : element)
            }
            if i < end {
                guard bytes[i] == UInt8(ascii: ",") else { return nil }
                i += 1
                if i == end { return nil }  // trailing comma
            }
        }
        return elements
    }
}
