/// Why a body could not be read as JSON; the text says what and at which byte, for the
/// `invalid_json` error.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}

extension JSONValue {
    /// Parses JSON text (RFC 8259, any top-level value) with the byte-level `JSONBytesParser`:
    /// integers that fit `Int64` stay integers, other numbers are doubles; a repeated key keeps
    /// its last value; nesting is limited to 512 levels.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        try JSONBytesParser.parse(bytes)
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONParseError) -> JSONValue in try JSONBytesParser.parse(buffer: buffer) }
        }
        return try result.get()
    }
}
