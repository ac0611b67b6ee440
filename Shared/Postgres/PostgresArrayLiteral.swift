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
        var elements: [[UInt8]?] = []
        let parsed = forEachElement(bytes) { element in elements.append(element.map { Array($0) }) }
        return parsed ? elements : nil
    }

    /// Calls `body` with each element's text (`nil` for NULL), in order; false when this is not a
    /// one-dimensional literal (`body` may have seen some elements by then).
    ///
    /// Why a visitor: a chunk's claim reads four arrays of a few hundred elements, and a `[UInt8]`
    /// per element (grown a byte at a time) before each became its `String` or `UUID` was most of
    /// that decoding's cost. An element without escapes is handed over in place, within `bytes`;
    /// one with escapes is unescaped into a scratch buffer reused for the whole literal. Either is
    /// valid only during the call.
    static func forEachElement(
        _ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> Void
    ) rethrows -> Bool {
        var i = 0
        // Skip an explicit dimension decoration: `[1:3]={...}`.
        if bytes.first == UInt8(ascii: "[") {
            while i < bytes.count, bytes[i] != UInt8(ascii: "=") { i += 1 }
            i += 1
        }
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return false }
        i += 1
        let end = bytes.count - 1
        if i == end { return true }
        var scratch: [UInt8] = []
        while i < end {
            while i < end, bytes[i] == UInt8(ascii: " ") { i += 1 }
            if bytes[i] == UInt8(ascii: "{") { return false }  // nested: not supported
            if bytes[i] == UInt8(ascii: "\"") {
                i += 1
                let start = i
                var escaped = false
                var closed = false
                while i < end {
                    let c = bytes[i]
                    if c == UInt8(ascii: "\\"), i + 1 < end {
                        escaped = true
                        i += 2
                    } else if c == UInt8(ascii: "\"") {
                        closed = true
                        break
                    } else {
                        i += 1
                    }
                }
                guard closed else { return false }
                let text = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
                i += 1
                if escaped {
                    unescape(text, into: &scratch)
                    try scratch.withUnsafeBytes { try body($0) }
                } else {
                    try body(text)
                }
                while i < end, bytes[i] == UInt8(ascii: " ") { i += 1 }
            } else {
                let start = i
                var escaped = false
                while i < end, bytes[i] != UInt8(ascii: ",") {
                    if bytes[i] == UInt8(ascii: "\\"), i + 1 < end {
                        escaped = true
                        i += 1
                    }
                    i += 1
                }
                var text = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
                if escaped {
                    unescape(text, into: &scratch)
                    while scratch.last == UInt8(ascii: " ") { scratch.removeLast() }
                    try scratch.withUnsafeBytes { try body(isNull($0) ? nil : $0) }
                } else {
                    while text.last == UInt8(ascii: " ") { text = UnsafeRawBufferPointer(rebasing: text.dropLast()) }
                    try body(isNull(text) ? nil : text)
                }
            }
            if i < end {
                guard bytes[i] == UInt8(ascii: ",") else { return false }
                i += 1
                if i == end { return false }  // trailing comma
            }
        }
        return true
    }

    /// The bytes of an element with each `\x` replaced by `x`.
    private static func unescape(_ text: UnsafeRawBufferPointer, into scratch: inout [UInt8]) {
        scratch.removeAll(keepingCapacity: true)
        var i = 0
        while i < text.count {
            if text[i] == UInt8(ascii: "\\"), i + 1 < text.count { i += 1 }
            scratch.append(text[i])
            i += 1
        }
    }

    /// An unquoted `NULL`, any case.
    private static func isNull(_ text: UnsafeRawBufferPointer) -> Bool {
        text.count == 4 && text[0] | 0x20 == UInt8(ascii: "n") && text[1] | 0x20 == UInt8(ascii: "u")
            && text[2] | 0x20 == UInt8(ascii: "l") && text[3] | 0x20 == UInt8(ascii: "l")
    }
}
