import BuzzKitWire

/// The OpenAPI 3.1 document, generated from `GatewayRoute.table` (the same list the router is
/// built from) and `ErrorCode.all`, so a route cannot exist without its description.
///
/// Each operation carries its scope twice: in words in the description and machine-readable as
/// `x-scopes`, plus `x-client-keys` where client (SDK) keys are allowed. Every error code a route
/// can answer appears as a response with its status; `components.schemas.ErrorCode` lists them all.
public enum OpenAPIDocument {
    public static func build(routes: [GatewayRoute]) -> JSONValue {
        var paths: [String: [String: JSONValue]] = [:]
        for route in routes {
            paths[route.path, default: [:]][route.method.lowercased()] = operation(route)
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": "BuzzKit API",
                "version": "1.0.0",
                "description": .string(
                    """
                    Every JSON response is the envelope {success, data, error, metadata}; metadata.requestId is \
                    always set, lists add metadata.cursor and metadata.hasMore, idempotent replays metadata.replayed. \
                    Authenticate with Authorization: Bearer <key>. Workspace keys name the tenant in the \
                    BuzzKit-Tenant header. \
                    Client keys also send BuzzKit-Installation: <bk_inst_... token of POST /v1/installations>. \
                    No string of a request body, nor any object key, may hold U+0000 (422 validation_failed: \
                    PostgreSQL cannot store it): each string's pattern says so, and free-form objects hold \
                    components.schemas.JSONValue. Rules across members are JSON Schema conditionals (allOf of \
                    if/then). \
                    Formats of BuzzKit's own: buzzkit-cursor (opaque: only a metadata.cursor this list returned, or \
                    empty; any other value is 422), buzzkit-time-zone (an IANA zone name the server's zone database \
                    knows), buzzkit-audience-expression (the audience language), buzzkit-workflow-expression (the same \
                    over rooted paths), buzzkit-p8-private-key (an APNs .p8 key's PEM text); x-max-utf8-bytes limits \
                    UTF-8 bytes on top of maxLength; x-rules lists in words the rules JSON Schema cannot state. \
                    Error codes and their statuses: \
                    \(errorCodes(routes).map { "\($0.rawValue) \($0.httpStatus)" }.joined(separator: ", ")).
                    """)
            ],
            "servers": [["url": "/"]],
            "paths": .object(paths.mapValues { JSONValue.object($0) }),
            // What BuzzKit POSTs to a tenant's webhook endpoints, per event type (OpenAPI 3.1 webhooks).
            "webhooks": WebhookSchemas.webhooks,
            "components": components(errorCodes(routes))
        ]
    }

    /// Every code the API answers: `ErrorCode.all`, plus any route code missing from it (so the
    /// document never hides one; `ErrorCodeListTests` fails until the code is added to `all`).
    public static func errorCodes(_ routes: [GatewayRoute]) -> [ErrorCode] {
        var seen = Set<String>()
        return (ErrorCode.all + routes.flatMap(\.errorCodes)).filter { seen.insert($0.rawValue).inserted }
    }

    /// The named schemas of the routes' modules, each a list of its own (a name given twice is a
    /// mistake `OpenAPITests` catches): request and answer shapes a client generator makes a type
    /// of, and the schemas that nest (workflow steps and conditions).
    static var namedSchemas: [[String: JSONValue]] {
        [
            Schema.components, MessageSchemas.components, WorkflowSchemas.components,
            LiveActivitySendRoutes.components, EventRoutes.components, WebhookSchemas.components
        ]
    }

    static func components(_ codes: [ErrorCode]) -> JSONValue {
        guard case .object(var members) = baseComponents(codes), case .object(var schemas)? = members["schemas"] else {
            return baseComponents(codes)
        }
        for named in namedSchemas {
            for (name, schema) in named { schemas[name] = schema }
        }
        members["schemas"] = .object(schemas)
        return .object(members)
    }

    static func baseComponents(_ codes: [ErrorCode]) -> JSONValue {
        [
            "securitySchemes": [
                "bearer": [
                    "type": "http", "scheme": "bearer",
                    "description": "An API key: bk_ws_... (workspace), bk_tk_... (tenant) or bk_ck_... (client)"
                ]
            ],
            "schemas": [
                "ErrorCode": [
                    "type": "string",
                    "enum": .array(codes.map { .string($0.rawValue) }),
                    "x-http-status": .object(
                        Dictionary(
                            uniqueKeysWithValues: codes.map { ($0.rawValue, JSONValue.int(Int64($0.httpStatus))) }))
                ],
                "Error": Schema.object(
                    [
                        "code": Schema.ref("ErrorCode"), "message": Schema.string(),
                        "details": ["description": "Specifics; for validation_failed a list of ValidationIssue"]
                    ], required: ["code", "message"]),
                "ValidationIssue": Schema.object(
                    [
                        "path": Schema.string(), "message": Schema.string(),
                        "index": [
                            "type": ["integer", "null"],
                            "description": "the event's position in the batch (events; null: the batch)"
                        ],
                        "field": [
                            "type": "string", "description": "events only: the same as path, kept for older clients"
                        ],
                        "line": ["type": "integer", "description": "1-based line in an expression"],
                        "column": ["type": "integer", "description": "1-based column in an expression"],
                        "code": ["type": "string", "description": "a finer reason (expressions: syntax_error, ...)"],
                        "expected": ["type": "string", "description": "what an expression's parser expected there"]
                    ], required: ["path", "message"], additional: true),
                "Metadata": Schema.object(
                    [
                        "requestId": Schema.string(), "cursor": Schema.nullable(Schema.string()),
                        "hasMore": Schema.boolean, "replayed": Schema.boolean
                    ], required: ["requestId"], additional: true),
                "ErrorEnvelope": Schema.object(
                    [
                        "success": ["const": false], "data": ["type": "null"], "error": Schema.ref("Error"),
                        "metadata": Schema.ref("Metadata")
                    ], required: ["success", "data", "error", "metadata"])
            ]
        ]
    }

    static func operation(_ route: GatewayRoute) -> JSONValue {
        var parameters: [JSONValue] = route.pathParameters.map { name in
            let schema = route.pathRules[name].map { Schema.string($0) } ?? Schema.string()
            return ["name": .string(name), "in": "path", "required": true, "schema": schema]
        }
        if route.paginated {
            parameters.append([
                "name": "cursor", "in": "query", "required": false,
                "description": .string(PageCursor.description),
                "schema": PageCursor.schema
            ])
            parameters.append([
                "name": "limit", "in": "query", "required": false,
                "description": "page size, default 50, at most 200",
                "schema": ["type": "integer", "minimum": 1, "maximum": 200, "default": 50]
            ])
        }
        for parameter in route.query {
            parameters.append([
                "name": .string(parameter.name), "in": "query", "required": false,
                "description": .string(parameter.description), "schema": parameter.schema
            ])
        }
        for header in route.headers {
            parameters.append([
                "name": .string(header.name), "in": "header", "required": false,
                "description": .string(header.description), "schema": header.schema
            ])
        }
        if route.actsOnTenant {
            parameters.append([
                "name": .string(TenantResolver.header), "in": "header", "required": false,
                "description": """
                The tenant id; required with a workspace key, optional (must be the key's own) with a \
                tenant or client key. When present it must be a UUID, for every kind of key: anything \
                else (an empty value too) is 404 tenant_not_found
                """,
                "schema": Schema.uuid
            ])
        }
        if route.needsInstallation {
            parameters.append([
                "name": .string(InstallationToken.header), "in": "header", "required": false,
                "description": """
                The installation token (bk_inst_..., from POST /v1/installations); required with a \
                client key, not read for other keys. When present it must have a token's shape, for \
                every kind of key: anything else is 401 unauthorized
                """,
                "schema": Schema.string(InstallationToken.rule)
            ])
        }
        if route.method == "POST" && route.needsKey {
            parameters.append([
                "name": .string(Idempotency.header), "in": "header", "required": false,
                "description": "Replays the first response for 24 hours for the same request",
                "schema": Schema.custom(
                    format: "buzzkit-idempotency-key",
                    """
                    A key naming one intended operation, 1 to 255 visible ASCII characters (no space): the same key with \
                    the same request within 24 hours answers the first response again (metadata.replayed), with \
                    another request 422 idempotency_key_reused. Use a new one (a UUID) for each new operation
                    """)
            ])
        }
        var responses: [String: JSONValue] = [:]
        let data = route.paginated ? Schema.array(route.response) : route.response
        if route.access == .infrastructure || route.access == .open {
            let mediaType = route.path == "/metrics" ? "text/plain" : "application/json"
            let schema = route.access == .open || route.path == "/metrics" ? route.response : envelope(data)
            responses[String(route.successStatus)] = ["description": "OK", "content": [mediaType: ["schema": schema]]]
        } else {
            responses[String(route.successStatus)] = [
                "description": "Success", "content": ["application/json": ["schema": envelope(data)]]
            ]
            for status in route.otherStatuses {
                responses[String(status)] = [
                    "description": status == 202 ? "Accepted: the work goes on in the background" : "Success",
                    "content": ["application/json": ["schema": envelope(data)]]
                ]
            }
            if route.successStatus == 200 && (route.method == "PUT") {
                responses["201"] = [
                    "description": "Created", "content": ["application/json": ["schema": envelope(data)]]
                ]
            }
        }
        var byStatus: [Int: [ErrorCode]] = [:]
        for code in route.errorCodes { byStatus[code.httpStatus, default: []].append(code) }
        for (status, codes) in byStatus {
            let names = codes.map(\.rawValue)
            var description = "Error: " + names.joined(separator: ", ")
            if status == 429 { description += " (Retry-After and RateLimit-* headers)" }
            responses[String(status)] = [
                "description": .string(description),
                "x-error-codes": .array(names.map(JSONValue.string)),
                "content": ["application/json": ["schema": Schema.ref("ErrorEnvelope")]]
            ]
        }
        var operation: [String: JSONValue] = [
            "operationId": .string(route.operationID),
            "summary": .string(route.summary),
            "responses": .object(responses)
        ]
        if !parameters.isEmpty { operation["parameters"] = .array(parameters) }
        if let body = route.requestBody {
            operation["requestBody"] = [
                "required": .bool(!route.requestBodyOptional),
                "content": ["application/json": ["schema": body]]
            ]
        }
        if route.access == .anyKey {
            operation["security"] = [["bearer": []]]
            operation["x-scopes"] = []
            operation["description"] = "Any valid key (workspace, tenant or client) may call it; no scope is needed."
        } else if let scope = route.scope {
            operation["security"] = [["bearer": []]]
            operation["x-scopes"] = [.string(scope.rawValue)]
            var description = "Requires the scope `\(scope.rawValue)`."
            if case .tenant(_, clientKeys: true) = route.access {
                operation["x-client-keys"] = true
                description +=
                    route.needsInstallation
                    ? " Client (SDK) keys may call it too, with their BuzzKit-Installation header, for their installation's own identities."
                    : " Client (SDK) keys may call it too (no installation header: this registers one)."
            }
            if case .workspace = route.access { description += " Workspace keys only." }
            operation["description"] = .string(description)
        } else {
            operation["security"] = []
        }
        return .object(operation)
    }

    static func envelope(_ data: JSONValue) -> JSONValue {
        Schema.object(
            [
                "success": ["const": true], "data": data, "error": ["type": "null"], "metadata": Schema.ref("Metadata")
            ], required: ["success", "data", "error", "metadata"])
    }
}
