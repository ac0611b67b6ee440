import BuzzKitWire

/// Checks on a request body's JSON text before it is parsed.
enum JSONText {
    /// Whether a string of the JSON text (a value or a key) holds U+0000, which PostgreSQL's
    /// `text` and `jsonb` cannot store. The parser refuses raw control characters, so a NUL can
    /// only come as the escape `\u0000`: a backslash that itself is not escaped (an odd run of
    /// backslashes), then `u0000`. One pass over the bytes, no parsing.
    static func containsNUL(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            var index = 0
            let count = buffer.count
            while index < count {
                guard buffer[index] == UInt8(ascii: "\\") else {
                    index += 1
                    continue
                }
                var run = 0
                while index < count && buffer[index] == UInt8(ascii: "\\") {
                    run += 1
                    index += 1
                }
                guard run % 2 == 1, index + 4 < count, buffer[index] == UInt8(ascii: "u") else { continue }
                if buffer[index + 1] == 0x30 && buffer[index + 2] == 0x30 && buffer[index + 3] == 0x30
                    && buffer[index + 4] == 0x30
                {
                    return true
                }
            }
            return false
        }
    }

    /// `422 validation_failed` for a body with U+0000 in a string (every route: the document says so once).
    static let nulRefused = APIError(
        .validationFailed, "the request is invalid: a string holds U+0000",
        details: [["path": "body", "message": "no string (or key) may contain U+0000 (NUL)"]])
}
