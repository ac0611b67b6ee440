import BuzzKitWire

/// A few builders for JSON Schema (2020-12, as OpenAPI 3.1 uses it), so route definitions read
/// like the shapes they describe.
enum Schema {
    static func ref(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/\(name)")] }

    static func object(
        _ properties: [String: JSONValue], required: [String] = [], additional: Bool = false,
        description: String? = nil
    ) -> JSONValue {
        var o: [String: JSONValue] = [
            "type": "object",
            "properties": .object(properties),
            "additionalProperties": .bool(additional)
        ]
        if !required.isEmpty { o["required"] = .array(required.sorted().map(JSONValue.string)) }
        if let description { o["description"] = .string(description) }
        return .object(o)
    }

    static func string(
        _ description: String? = nil, maxLength: Int? = nil, pattern: String? = nil,
        format: String? = nil, enumeration: [String]? = nil
    ) -> JSONValue {
        var o: [String: JSONValue] = ["type": "string"]
        if let description { o["description"] = .string(description) }
        if let maxLength { o["maxLength"] = .int(Int64(maxLength)); o["minLength"] = 1 }
        if let pattern { o["pattern"] = .string(pattern) }
        if let format { o["format"] = .string(format) }
        if let enumeration { o["enum"] = .array(enumeration.map(JSONValue.string)) }
        return .object(o)
    }

    /// A string obeying `rule`: the very rule the validator checks (lengths, pattern, format).
    static func string(_ rule: TextRule, _ description: String? = nil, format: String? = nil) -> JSONValue {
        var o: [String: JSONValue] = ["type": "string", "minLength": .int(Int64(rule.minLength))]
        if rule.maxLength < Int.max { o["maxLength"] = .int(Int64(rule.maxLength)) }
        if let description { o["description"] = .string(description) }
        if let pattern = rule.pattern { o["pattern"] = .string(pattern) }
        if let bytes = rule.maxUTF8Bytes { o["x-max-utf8-bytes"] = .int(Int64(bytes)) }
        if let format = format ?? rule.format { o["format"] = .string(format) }
        return .object(o)
    }

    /// A string that is one of `values` (a `TextRule.oneOf` rule, as an `enum`).
    static func enumeration(_ values: [String], _ description: String? = nil) -> JSONValue {
        string(description, enumeration: values)
    }

    /// A string of one of BuzzKit's own formats (`buzzkit-cursor`, `buzzkit-audience-expression`,
    /// `buzzkit-p8-private-key`): the format is the rule, stated in `description` (lengths included)
    /// and shown by `example`. Nothing else is in the schema, so a generator that knows the format
    /// draws from it alone.
    static func custom(format: String, _ description: String, example: String? = nil) -> JSONValue {
        var schema: [String: JSONValue] = [
            "type": "string", "format": .string(format), "description": .string(description)
        ]
        if let example { schema["example"] = .string(example) }
        return .object(schema)
    }

    static let uuid = string(TextRule.uuid)
    /// An IANA time zone name: `components.schemas.TimeZone`, the names the validator knows.
    static let timezone = ref("TimeZone")
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

    /// `schema` (an object) with `members` added: `oneOf`, `anyOf`, ... next to its properties.
    static func adding(_ members: [String: JSONValue], to schema: JSONValue) -> JSONValue {
        guard case .object(var object) = schema else { return schema }
        for (name, value) in members { object[name] = value }
        return .object(object)
    }

    /// The schema or JSON null.
    static func nullable(_ schema: JSONValue) -> JSONValue { ["oneOf": [schema, ["type": "null"]]] }
}
