import Foundation

/// Why a body could not be read as JSON; the text says where, for the `invalid_json` error.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

extension JSONValue {
    /// Parses JSON text. Accepts any top-level value; integers that fit `Int64` stay integers.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        } catch let DecodingError.dataCorrupted(context) {
            let underlying = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            throw JSONParseError(description: underlying ?? context.debugDescription)
        } catch {
            throw JSONParseError(description: "the body is not valid JSON")
        }
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }
}
