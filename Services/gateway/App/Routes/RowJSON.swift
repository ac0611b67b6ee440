import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// Reading result columns straight into JSON values (timestamps are selected as ISO 8601 text
/// with `to_json(column)#>>'{}'`, so Swift never formats dates).
extension PostgresRow {
    func text(_ name: String) throws -> JSONValue {
        (try decode(String?.self, named: name)).map(JSONValue.string) ?? .null
    }

    func bool(_ name: String) throws -> JSONValue { .bool(try decode(Bool.self, named: name)) }

    func json(_ name: String) throws -> JSONValue { try decode(JSONValue?.self, named: name) ?? .null }

    func uuid(_ name: String) throws -> JSONValue {
        (try decode(UUID?.self, named: name)).map { .string($0.lowercasedText) } ?? .null
    }
}

/// `to_json(x)#>>'{}' AS x` for a timestamp column.
func isoColumn(_ column: String, as name: String? = nil) -> String {
    "to_json(\(column))#>>'{}' AS \(name ?? column)"
}

extension Gateway {
    /// A path parameter that must be a UUID; anything else is `404` (such a thing cannot exist).
    static func uuidParameter(_ context: RequestContext, _ name: String, notFound: APIError) throws(APIError) -> UUID {
        guard let id = UUID(uuidText: context.parameter(name)) else { throw notFound }
        return id
    }

    /// A path parameter checked like a body field (422 with its path on failure), against the
    /// rule the OpenAPI document states for it.
    /// The same with a length and a check function (prefer a `TextRule`, which the document states).
    static func pathParameter(
        _ context: RequestContext, _ name: String, maxLength: Int = 256,
        rule check: (String) -> String?
    ) throws(APIError) -> String {
        try pathParameter(context, name, rule: .length(1, maxLength), problem: nil).checked(name, check)
    }

    static func pathParameter(
        _ context: RequestContext, _ name: String, rule: TextRule,
        problem: ((String) -> String?)? = nil
    ) throws(APIError) -> String {
        let value = context.parameter(name)
        if let found = rule.problem(with: value) {
            try Validator.throwIfAny([ValidationIssue(path: "path.\(name)", message: problem?(value) ?? found)])
        }
        return value
    }
}

extension String {
    fileprivate func checked(_ name: String, _ check: (String) -> String?) throws(APIError) -> String {
        if let problem = check(self) {
            try Validator.throwIfAny([ValidationIssue(path: "path.\(name)", message: problem)])
        }
        return self
    }
}
