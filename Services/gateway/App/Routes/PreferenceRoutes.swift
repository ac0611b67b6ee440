import BuzzKitHTTPServer
import BuzzKitPolicy
import BuzzKitWire
import Foundation

/// `GET/PUT /v1/subscribers/{id}/preferences` and their history: `{all, categories}` (`all: false`
/// is the global unsubscribe); a PUT replaces what it names and keeps the rest, and every change is
/// kept with its time and source. Client (SDK) keys may read and change their own subscriber's
/// only: with the `BuzzKit-Subscriber-Signature` the tenant's backend made for that id.
enum PreferenceRoutes {
    /// Categories one change may name.
    static let maxCategoriesPerChange = 200

    static let signatureHeader = QueryParameter(
        SubscriberSignature.header,
        """
        Required with a client key (not checked against the secret for other keys): the lowercase hex \
        HMAC-SHA256 of the subscriber id, keyed with the tenant's identity secret (POST \
        /v1/settings/identity-secret); anything else is 403 forbidden_subscriber. When present it must be 64 \
        hexadecimal characters, for every kind of key (else 403 forbidden_subscriber)
        """,
        schema: Schema.string(SubscriberSignature.rule))

    static let effective = Schema.object(
        [
            "key": Schema.string(FieldRules.keyRule), "name": Schema.string(FieldRules.nameRule),
            "description": Schema.nullable(Schema.string(CategoryRoutes.descriptionRule)),
            "critical": Schema.boolean, "defaultEnabled": Schema.boolean,
            "enabled": Schema.adding(
                ["description": "Whether pushes of this category reach the subscriber now"], to: Schema.boolean),
            "chosen": Schema.adding(
                ["description": "The subscriber chose (else the category's default applies)"], to: Schema.boolean)
        ], required: ["key", "name", "description", "critical", "defaultEnabled", "enabled", "chosen"])

    /// Category key (an existing category's, format `buzzkit-category-key`) → on or off.
    static let choices: JSONValue = [
        "type": "object", "description": "Category key: on (true) or off (false)",
        "additionalProperties": Schema.boolean,
        "propertyNames": ["pattern": .string(Schema.withoutNUL), "format": "buzzkit-category-key"]
    ]

    static let preferences = Schema.object(
        [
            "subscriberId": Schema.string(FieldRules.identifierRule),
            "all": Schema.adding(["description": "false: the global unsubscribe"], to: Schema.boolean),
            "categories": Schema.adding(
                ["description": "The subscriber's own choices (a category not named follows its default)"],
                to: choices),
            "updatedAt": Schema.nullable(Schema.timestamp),
            "effective": Schema.array(effective),
            "changed": Schema.adding(["description": "PUT only: whether anything changed"], to: Schema.boolean)
        ], required: ["subscriberId", "all", "categories", "updatedAt", "effective"])

    static let change = Schema.object(
        [
            "from": Schema.adding(
                ["description": "The value before; null: it was the default"],
                to: ["type": ["boolean", "null"]]),
            "to": Schema.adding(
                ["description": "The value after; null: back to the default (a category's choice removed)"],
                to: ["type": ["boolean", "null"]])
        ], required: ["from", "to"])

    static let historyEntry = Schema.object(
        [
            "id": Schema.string("The change's id (history order)"), "at": Schema.timestamp,
            "source": Schema.string(enumeration: PreferenceSource.allCases.map(\.rawValue)),
            "all": Schema.nullable(change),
            "categories": Schema.adding(["additionalProperties": change], to: ["type": "object"])
        ], required: ["id", "at", "source", "all", "categories"])

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/v1/subscribers/{id}/preferences", id: "getPreferences",
                "A subscriber's preferences: the global switch, their choices and what each category means for them",
                access: .tenant(.subscribersRead, clientKeys: true), path: SubscriberRoutes.idPath,
                headers: [signatureHeader], response: preferences, errors: [.notFound, .forbiddenSubscriber],
                handler: { g, c in try await g.getPreferences(c) }),
            GatewayRoute(
                "PUT", "/v1/subscribers/{id}/preferences", id: "putPreferences",
                "Change a subscriber's preferences: what the body names is replaced, the rest kept; the change is "
                    + "kept in the history with its source",
                access: .tenant(.subscribersWrite, clientKeys: true), path: SubscriberRoutes.idPath,
                body: Schema.object(
                    [
                        "all": Schema.nullable(
                            Schema.adding(["description": "false: the global unsubscribe"], to: Schema.boolean)),
                        "categories": Schema.nullable(
                            Schema.adding(
                                [
                                    "maxProperties": .int(Int64(maxCategoriesPerChange)),
                                    "description": .string(
                                        "Existing categories' keys: on, off, or null to remove the choice (the "
                                            + "category follows its default again); an unknown key is 422"),
                                    "additionalProperties": ["type": ["boolean", "null"]]
                                ], to: choices)),
                        "source": Schema.nullable(
                            Schema.string(
                                "Who made the change (default api); client keys' changes are always sdk and may "
                                    + "not name one",
                                enumeration: [PreferenceSource.api.rawValue, PreferenceSource.dashboard.rawValue]))
                    ]),
                headers: [signatureHeader], response: preferences, errors: [.notFound, .forbiddenSubscriber],
                handler: { g, c in try await g.putPreferences(c) }),
            GatewayRoute(
                "GET", "/v1/subscribers/{id}/preferences/history", id: "listPreferenceChanges",
                "A subscriber's preference changes, newest first, each with its time and source",
                access: .tenant(.subscribersRead, clientKeys: false), path: SubscriberRoutes.idPath,
                response: historyEntry, paginated: true, errors: [.notFound],
                handler: { g, c in try await g.listPreferenceChanges(c) })
        ]
    }

    static func json(_ stored: StoredPreferences, subscriber: String) -> [String: JSONValue] {
        [
            "subscriberId": .string(subscriber), "all": .bool(stored.preferences.all),
            "categories": .object(stored.preferences.categories.mapValues(JSONValue.bool)),
            "updatedAt": Gateway.timestamp(stored.updatedAt),
            "effective": .array(
                stored.effective.map {
                    [
                        "key": .string($0.category.key), "name": .string($0.category.name),
                        "description": $0.category.description.map(JSONValue.string) ?? .null,
                        "critical": .bool($0.category.critical), "defaultEnabled": .bool($0.category.defaultEnabled),
                        "enabled": .bool($0.enabled), "chosen": .bool($0.chosen)
                    ]
                })
        ]
    }

    static func json(_ record: PreferenceChangeRecord) -> [String: JSONValue] {
        [
            "id": .string(String(record.id)), "at": .string(EventTimestamp.format(record.at)),
            "source": .string(record.source.rawValue), "all": record.all?.jsonValue ?? .null,
            "categories": .object(record.categories.mapValues(\.jsonValue))
        ]
    }
}

extension Gateway {
    func getPreferences(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let subscriber = try SubscriberRoutes.subscriberID(context)
        try await requireSubscriberSignature(context, subscriber: subscriber)
        guard let stored = try await policy.preferences(tenant: tenant, subscriber: subscriber) else {
            throw APIError.notFound("subscriber")
        }
        return .json(.object(PreferenceRoutes.json(stored, subscriber: subscriber)))
    }

    /// `PUT /v1/subscribers/{id}/preferences {all?, categories?, source?}`.
    func putPreferences(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let subscriber = try SubscriberRoutes.subscriberID(context)
        let client = context.key?.kind == .client
        try await requireSubscriberSignature(context, subscriber: subscriber)
        var v = Validator(try context.request.jsonBody(), allowed: ["all", "categories", "source"])
        let all = v.bool("all")
        var categories: [String: Bool] = [:]
        var resets: Set<String> = []
        if let object = v.object("categories")?.objectValue {
            if object.count > PreferenceRoutes.maxCategoriesPerChange {
                v.add("categories", "may name at most \(PreferenceRoutes.maxCategoriesPerChange) categories")
            }
            for (key, value) in object.sorted(by: { $0.key < $1.key }) {
                if let problem = FieldRules.keyRule.problem(with: key) {
                    v.add("categories.\(key)", "is not a category key: \(problem)")
                } else if let enabled = value.boolValue {
                    categories[key] = enabled
                } else if value == .null {
                    resets.insert(key)
                } else {
                    v.add("categories.\(key)", "must be true, false or null (back to the category's default)")
                }
            }
        }
        var source = client ? PreferenceSource.sdk : .api
        if v.has("source") && !v.isNull("source") {
            if client {
                v.add("source", "is not taken from client keys: their changes are recorded as sdk")
            } else if let named = v.oneOf(
                "source", [PreferenceSource.api.rawValue, PreferenceSource.dashboard.rawValue])
            {
                source = PreferenceSource(rawValue: named) ?? .api
            }
        }
        try v.check()
        guard
            let (record, stored) = try await policy.changePreferences(
                tenant: tenant, subscriber: subscriber, PreferenceChange(all: all, categories: categories),
                resets: resets, source: source)
        else { throw APIError.notFound("subscriber") }
        var json = PreferenceRoutes.json(stored, subscriber: subscriber)
        json["changed"] = .bool(record != nil)
        return .json(.object(json))
    }

    func listPreferenceChanges(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let subscriber = try SubscriberRoutes.subscriberID(context)
        let page = try Page(context.request)
        let before = try page.idCursor()
        let changes = try await policy.preferenceHistory(
            tenant: tenant, subscriber: subscriber, before: before, limit: page.limit + 1)
        if changes.isEmpty && before == nil,
            try await policy.preferences(tenant: tenant, subscriber: subscriber) == nil
        {
            throw APIError.notFound("subscriber")
        }
        return page.response(changes.map(PreferenceRoutes.json)) { $0["id"]?.stringValue ?? "" }
    }
}
