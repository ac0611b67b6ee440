import BuzzKitWire

/// A few builders for JSON Schema (2020-12, as OpenAPI 3.1 uses it), so route definitions read
/// like the shapes they describe.
enum Schema {
    static func ref(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/\(name)")] }

    static func object(_ properties: [String: JSONValue], required: [String] = [], additional: Bool = false,
                       description: String? = nil) -> JSONValue {
        var o: [String: JSONValue] = [
            "type": "object",
            "properties": .object(properties),
            "additionalProperties": .bool(additional),
        ]
        if !required.isEmpty { o["required"] = .array(required.sorted().map(JSONValue.string)) }
        if let description { o["description"] = .string(description) }
        return .object(o)
    }

    static func string(_ description: String? = nil, maxLength: Int? = nil, pattern: String? = nil,
                       format: String? = nil, enumeration: [String]? = nil) -> JSONValue {
        var o: [String: JSONValue] = ["type": "string"]
        if let description { o["description"] = .string(description) }
        if let maxLength { o["maxLength"] = .int(Int64(maxLength)); o["minLength"] = 1 }
        if let pattern { o["pattern"] = .string(pattern) }
        if let format { o["format"] = .string(format) }
        if let enumeration { o["enum"] = .array(enumeration.map(JSONValue.string)) }
        return .object(o)
    }

    static let uuid = string(format: "uuid")
    static let timestamp = string(format: "date-time")
    static let boolean: JSONValue = ["type": "boolean"]
    static let integer: JSONValue = ["type": "integer"]
    static let anyObject: JSONValue = ["type": "object", "additionalProperties": true]

    static func array(_ items: JSONValue, minItems: Int? = nil, maxItems: Int? = nil) -> JSONValue {
        var o: [String: JSONValue] = ["type": "array", "items": items]
        if let minItems { o["minItems"] = .int(Int64(minItems)) }
        if let maxItems { o["maxItems"] = .int(Int64(maxItems)) }
        return .object(o)
    }

    /// The schema or JSON null.
    static func nullable(_ schema: JSONValue) -> JSONValue { ["oneOf": [schema, ["type": "null"]]] }
}
