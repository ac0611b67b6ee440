import BuzzKitHTTPServer
import BuzzKitPolicy
import BuzzKitWire
import Foundation

/// `PUT/GET/DELETE /v1/categories/{key}`, `GET /v1/categories`: the kinds of notification a tenant
/// sends, which subscribers turn on or off and frequency caps count (`BuzzKitPolicy`). A message's
/// or a workflow send's `category` names one (it is also the notification's `aps.category`).
enum CategoryRoutes {
    static let keyPath: [String: TextRule] = ["key": FieldRules.keyRule]
    /// A category's description: at most 1,000 characters.
    static let descriptionRule = TextRule.length(1, 1000)

    /// A reference to one of the tenant's categories (a message's, a cap's, the default, a
    /// preference's key): whether it exists depends on the server, so a format of its own.
    static func reference(_ description: String) -> JSONValue {
        Schema.custom(
            format: "buzzkit-category-key",
            description + "; the key of an existing category of the tenant (1 to 128 letters, digits, _ - . :), "
                + "any other is 422 validation_failed",
            example: "news")
    }

    static let category = Schema.object(
        [
            "key": Schema.string(FieldRules.keyRule), "name": Schema.string(FieldRules.nameRule),
            "description": Schema.nullable(Schema.string(descriptionRule)),
            "defaultEnabled": Schema.boolean, "critical": Schema.boolean,
            "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp
        ], required: ["key", "name", "description", "defaultEnabled", "critical", "createdAt", "updatedAt"])

    static var routes: [GatewayRoute] {
        let read = GatewayRoute.Access.tenant(.settingsRead, clientKeys: false)
        let write = GatewayRoute.Access.tenant(.settingsWrite, clientKeys: false)
        return [
            GatewayRoute(
                "GET", "/v1/categories", id: "listCategories", "List the tenant's categories in key order",
                access: read, response: category, paginated: true, handler: { g, c in try await g.listCategories(c) }),
            GatewayRoute(
                "PUT", "/v1/categories/{key}", id: "putCategory",
                "Create or replace a category (201 when created): subscribers turn it on or off, caps may count it; "
                    + "a critical one ignores preferences and caps",
                access: write, path: keyPath,
                body: Schema.object(
                    [
                        "name": Schema.string(FieldRules.nameRule),
                        "description": Schema.nullable(Schema.string(descriptionRule)),
                        "defaultEnabled": Schema.nullable(
                            Schema.adding(
                                ["description": "What a subscriber who never chose gets (default true)"],
                                to: Schema.boolean)),
                        "critical": Schema.nullable(
                            Schema.adding(
                                ["description": "Ignores preferences and frequency caps (default false)"],
                                to: Schema.boolean))
                    ], required: ["name"]),
                response: category, errors: [.categoryInUse], handler: { g, c in try await g.putCategory(c) }),
            GatewayRoute(
                "GET", "/v1/categories/{key}", id: "getCategory", "Read a category", access: read, path: keyPath,
                response: category, errors: [.notFound], handler: { g, c in try await g.getCategory(c) }),
            GatewayRoute(
                "DELETE", "/v1/categories/{key}", id: "deleteCategory",
                "Delete a category and every subscriber's choice for it (idempotent; 409 category_in_use while an "
                    + "enabled workflow sends in it, it is the default category or a cap counts it)",
                access: write, path: keyPath,
                response: Schema.object(["key": Schema.string(FieldRules.keyRule), "deleted": Schema.boolean]),
                errors: [.categoryInUse], handler: { g, c in try await g.deleteCategory(c) })
        ]
    }

    static func key(_ context: RequestContext) throws(APIError) -> String {
        try Gateway.pathParameter(context, "key", rule: FieldRules.keyRule)
    }

    static func json(_ category: Category) -> JSONValue {
        [
            "key": .string(category.key), "name": .string(category.name),
            "description": category.description.map(JSONValue.string) ?? .null,
            "defaultEnabled": .bool(category.defaultEnabled), "critical": .bool(category.critical),
            "createdAt": .string(EventTimestamp.format(category.createdAt)),
            "updatedAt": .string(EventTimestamp.format(category.updatedAt))
        ]
    }
}

extension Gateway {
    func putCategory(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try CategoryRoutes.key(context)
        var v = Validator(
            try context.request.jsonBody(), allowed: ["name", "description", "defaultEnabled", "critical"])
        let name = v.string("name", required: true, rule: FieldRules.nameRule)
        let description = v.string("description", rule: CategoryRoutes.descriptionRule)
        let defaultEnabled = v.bool("defaultEnabled") ?? true
        let critical = v.bool("critical") ?? false
        try v.check()
        guard let name else { throw APIError.internalError }
        let (category, created) = try await policy.putCategory(
            tenant: tenant, key: key,
            Category.Definition(
                name: name, description: description, defaultEnabled: defaultEnabled, critical: critical))
        return .json(CategoryRoutes.json(category), status: created ? 201 : 200)
    }

    func listCategories(_ context: RequestContext) async throws -> Response {
        let page = try Page(context.request)
        let categories = try await policy.categories(
            tenant: try context.tenant, after: page.after, limit: page.limit + 1)
        let items = categories.map { CategoryRoutes.json($0).objectValue ?? [:] }
        return page.response(items) { $0["key"]?.stringValue ?? "" }
    }

    func getCategory(_ context: RequestContext) async throws -> Response {
        guard let category = try await policy.category(tenant: try context.tenant, key: try CategoryRoutes.key(context))
        else { throw APIError.notFound("category") }
        return .json(CategoryRoutes.json(category))
    }

    func deleteCategory(_ context: RequestContext) async throws -> Response {
        let key = try CategoryRoutes.key(context)
        let deleted = try await policy.deleteCategory(tenant: try context.tenant, key: key)
        return .json(["key": .string(key), "deleted": .bool(deleted)])
    }
}
