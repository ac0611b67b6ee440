import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// `POST/GET /v1/api-keys`, `DELETE /v1/api-keys/{id}`. A key can grant only scopes it holds
/// itself, and only those its kind allows (`Scope.tenantScopes`, `Scope.clientScopes`). The
/// secret is in the create response only. Revoking evicts the key from this replica's cache at
/// once and tells the other replicas through Postgres NOTIFY.
enum APIKeyRoutes {
    static let key = Schema.object([
        "id": Schema.uuid, "workspaceId": Schema.uuid, "tenantId": Schema.nullable(Schema.uuid),
        "kind": Schema.string(enumeration: APIKeyKind.allCases.map(\.rawValue)),
        "name": Schema.string(FieldRules.nameRule), "prefix": Schema.string("The visible start of the key"),
        "scopes": Schema.array(Schema.string(enumeration: Scope.all.map(\.rawValue))),
        "createdAt": Schema.timestamp, "lastUsedAt": Schema.nullable(Schema.timestamp),
        "revokedAt": Schema.nullable(Schema.timestamp),
        "secret": Schema.string("The key itself: only in the create response, never again")
    ])

    /// The create body: a workspace key (no tenantId; scopes from every scope), a tenant key
    /// (tenantId; tenant scopes) or a client key (kind client, tenantId; client scopes, default
    /// all of them). `kind` absent means tenant with a tenantId, workspace without; null is absent.
    static var createBody: JSONValue {
        func scopes(_ list: [Scope]) -> JSONValue {
            Schema.array(Schema.string(enumeration: list.map(\.rawValue)), minItems: 1)
        }
        let body = Schema.object(
            [
                "name": Schema.string(FieldRules.nameRule),
                "scopes": Schema.nullable(scopes(Scope.all)),
                "tenantId": Schema.nullable(Schema.uuid),
                "kind": Schema.nullable(Schema.string(enumeration: APIKeyKind.allCases.map(\.rawValue)))
            ], required: ["name"])
        return Schema.adding(
            [
                "oneOf": [
                    [
                        "description": "a workspace key", "required": ["scopes"],
                        "properties": [
                            "kind": ["enum": ["workspace", .null]], "tenantId": ["type": "null"],
                            "scopes": scopes(Scope.all)
                        ]
                    ],
                    [
                        "description": "a tenant key", "required": ["tenantId", "scopes"],
                        "properties": [
                            "kind": ["enum": ["tenant", .null]], "tenantId": Schema.uuid,
                            "scopes": scopes(Scope.tenantScopes)
                        ]
                    ],
                    [
                        "description": "a client key", "required": ["kind", "tenantId"],
                        "properties": [
                            "kind": ["const": "client"], "tenantId": Schema.uuid,
                            "scopes": Schema.nullable(scopes(Scope.clientScopes))
                        ]
                    ]
                ]
            ], to: body)
    }

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "POST", "/v1/api-keys", id: "createAPIKey",
                "Create a key: a workspace key (no tenantId), a tenant key or a client key (kind client)",
                access: .workspace(.keysWrite),
                body: createBody,
                response: key, status: 201, errors: [.tenantNotFound],
                handler: { g, c in try await g.createKey(c) }),
            GatewayRoute(
                "GET", "/v1/api-keys", id: "listAPIKeys", "List the workspace's keys (never their secrets)",
                access: .workspace(.keysWrite), response: key, paginated: true,
                handler: { g, c in try await g.listKeys(c) }),
            GatewayRoute(
                "GET", "/v1/key", id: "getCallingKey",
                "The key making the request: its kind, scopes, workspace and tenant (never its secret); what a dashboard signs in with",
                access: .anyKey, response: key, handler: { g, c in try await g.callingKey(c) }),
            GatewayRoute(
                "DELETE", "/v1/api-keys/{id}", id: "revokeAPIKey", "Revoke a key; it stops working at once",
                access: .workspace(.keysWrite), path: ["id": .uuid], response: key, errors: [.notFound],
                handler: { g, c in try await g.revokeKey(c) })
        ]
    }
}

extension Gateway {
    func createKey(_ context: RequestContext) async throws -> Response {
        guard let caller = context.key else { throw APIErrorShortcuts.unauthorized }
        let body = try context.request.jsonBody()
        var v = Validator(body, allowed: ["name", "scopes", "tenantId", "kind"])
        let name = v.string("name", required: true, rule: FieldRules.nameRule)
        let tenantText = v.string("tenantId", rule: .uuid)
        let kindText = v.oneOf("kind", APIKeyKind.allCases.map(\.rawValue))
        var kind: APIKeyKind = tenantText == nil ? .workspace : .tenant
        if let kindText, let given = APIKeyKind(rawValue: kindText) {
            kind = given
            if given == .workspace && tenantText != nil { v.add("tenantId", "must be absent for a workspace key") }
            if given != .workspace && tenantText == nil {
                v.add("tenantId", "is required for \(given.rawValue) keys")
            }
        }
        let allowed = Scope.allowed(for: kind)
        var scopes: [Scope] = []
        if let raw = body["scopes"], !raw.isNull {
            if let list = raw.arrayValue, !list.isEmpty {
                for (index, item) in list.enumerated() {
                    guard let text = item.stringValue, let scope = Scope(rawValue: text) else {
                        v.add(
                            "scopes[\(index)]", "must be one of: " + Scope.all.map(\.rawValue).joined(separator: ", "))
                        continue
                    }
                    guard allowed.contains(scope) else {
                        v.add("scopes[\(index)]", "\(text) cannot be granted to a \(kind.rawValue) key")
                        continue
                    }
                    if !scopes.contains(scope) { scopes.append(scope) }
                }
            } else {
                v.add("scopes", "must be a non-empty array of scopes")
            }
        } else if kind == .client {
            scopes = Scope.clientScopes
        } else {
            v.add("scopes", "is required")
        }
        try v.check()
        if let missing = scopes.first(where: { !caller.scopes.contains($0) }) {
            throw APIError(
                .forbiddenScope, "a key cannot grant the scope \(missing.rawValue), which it lacks itself",
                details: ["scope": .string(missing.rawValue)])
        }
        let tenant = tenantText.flatMap(UUID.init(uuidString:))
        if let tenant, try await tenants.workspace(of: tenant) != caller.workspaceID {
            throw TenantResolver.notFound
        }
        let created = try await keys.create(
            workspaceID: caller.workspaceID, tenantID: tenant, kind: kind,
            name: name ?? "", scopes: scopes)
        cache.forget(APIKeyFormat.hash(created.secret))
        return .json(created.json, status: 201)
    }

    func listKeys(_ context: RequestContext) async throws -> Response {
        let page = try Page(context.request)
        let rows = try await keys.list(
            workspaceID: try context.workspaceID, after: page.after.flatMap { UUID(uuidString: $0)?.uuidString },
            limit: page.limit + 1)
        return page.response(rows) { $0["id"]?.stringValue ?? "" }
    }

    func callingKey(_ context: RequestContext) async throws -> Response {
        guard let caller = context.key else { throw APIErrorShortcuts.unauthorized }
        guard let row = try await keys.get(workspaceID: caller.workspaceID, id: caller.id) else {
            throw APIErrorShortcuts.unauthorized
        }
        return .json(.object(row))
    }

    func revokeKey(_ context: RequestContext) async throws -> Response {
        let notFound = APIError.notFound("API key")
        let id = try Self.uuidParameter(context, "id", notFound: notFound)
        guard let row = try await keys.revoke(workspaceID: try context.workspaceID, id: id) else { throw notFound }
        cache.evict(keyID: id)
        installationCache.evict(apiKeyID: id)
        await revocations.announce(id)
        return .json(.object(row))
    }
}
