import BuzzKitWire

/// A few builders for JSON Schema (2020-12, as OpenAPI 3.1 uses it), so route definitions read
/// like the shapes they describe.
///
/// No string of a request body, nor any object key, may hold U+0000 (PostgreSQL cannot store it;
/// the gateway answers such a body 422 `validation_failed`). The builders state it where it
/// applies: a string with no rule of its own gets `withoutNUL` as its pattern, and a free-form
/// object (`anyObject`, `additional: true`) names its keys with it and holds `JSONValue`s.
enum Schema {
    static func ref(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/\(name)")] }

    /// Any text without U+0000: the pattern `TextRule.length` states.
    static let withoutNUL = #"^[^\x00]*$"#

    /// The named schemas these builders refer to (`#/components/schemas/...`).
    static var components: [String: JSONValue] {
        [
            "JSONValue": [
                "description": """
                Any JSON value in which no string and no object key holds U+0000. Free-form members \
                (data, attributes, contentState) hold these
                """,
                "pattern": .string(withoutNUL), "propertyNames": ["pattern": .string(withoutNUL)],
                "additionalProperties": ref("JSONValue"), "items": ref("JSONValue")
            ],
            "TimeZone": custom(
                format: "buzzkit-time-zone",
                """
                An IANA time zone name such as Europe/Berlin, at most \(FieldRules.timezoneRule.maxLength) \
                characters: one this server's time zone database knows (format buzzkit-time-zone), anything \
                else is 422 validation_failed. A string, not an enum: the database grows with its releases, and \
                a client need not follow it
                """, example: "Europe/Berlin")
        ]
    }

    static func object(
        _ properties: [String: JSONValue], required: [String] = [], additional: Bool = false,
        description: String? = nil
    ) -> JSONValue {
        var o: [String: JSONValue] = [
            "type": "object",
            "properties": .object(properties),
            "additionalProperties": .bool(false)
        ]
        if additional {
            o["propertyNames"] = ["pattern": .string(withoutNUL)]
            o["additionalProperties"] = ref("JSONValue")
        }
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
        if let maxLength {
            o["maxLength"] = .int(Int64(maxLength))
            o["minLength"] = 1
        }
        if let pattern {
            o["pattern"] = .string(pattern)
        } else if enumeration == nil && format == nil {
            o["pattern"] = .string(withoutNUL)
        }
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

    /// A string of one of BuzzKit's own formats (`buzzkit-cursor`, `buzzkit-time-zone`,
    /// `buzzkit-audience-expression`, `buzzkit-p8-private-key`, ...): values checked against the
    /// server itself (its zone database, clock, parsers, keys). The format is the whole rule,
    /// lengths included, stated in `description` and shown by `example`; nothing else is in the
    /// schema, so a generator that knows the format draws from it alone (schemathesis builds
    /// length and pattern boundary values without the format as soon as either is there).
    static func custom(format: String, _ description: String, example: String? = nil) -> JSONValue {
        var schema: [String: JSONValue] = [
            "type": "string", "format": .string(format), "description": .string(description)
        ]
        if let example { schema["example"] = .string(example) }
        return .object(schema)
    }

    static let uuid = string(TextRule.uuid)
    /// An IANA time zone name: `components.schemas.TimeZone`, a string the validator checks
    /// against the zone database.
    static let timezone = ref("TimeZone")
    static let timestamp = string(format: "date-time")
    static let boolean: JSONValue = ["type": "boolean"]
    static let integer: JSONValue = ["type": "integer"]
    /// A free-form object: any members, no U+0000 in a key or a string anywhere in it.
    static let anyObject: JSONValue = [
        "type": "object", "propertyNames": ["pattern": .string(withoutNUL)], "additionalProperties": ref("JSONValue")
    ]

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

    /// An object used as a map: keys of the caller's choosing (no U+0000), each value `values`.
    static func map(_ values: JSONValue, description: String? = nil) -> JSONValue {
        var o: [String: JSONValue] = [
            "type": "object", "propertyNames": ["pattern": .string(withoutNUL)], "additionalProperties": values
        ]
        if let description { o["description"] = .string(description) }
        return .object(o)
    }

    /// Every member named is absent or null (a condition for `if`).
    static func absent(_ members: [String]) -> JSONValue {
        ["properties": .object(Dictionary(uniqueKeysWithValues: members.map { ($0, ["type": "null"]) }))]
    }

    /// The member is present and not null (a condition for `if`).
    static func given(_ member: String) -> JSONValue {
        ["required": [.string(member)], "properties": [member: ["not": ["type": "null"]]]]
    }

    /// The schema or JSON null.
    static func nullable(_ schema: JSONValue) -> JSONValue { ["oneOf": [schema, ["type": "null"]]] }
}
