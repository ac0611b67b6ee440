import BuzzKitHTTPServer
import BuzzKitWebhooks
import BuzzKitWire
import Foundation

/// Outbound webhooks (issue 27): a tenant's endpoints, their secrets, tests, attempts and
/// replays. Endpoints are written through `WebhookEndpointStore` (Shared/Webhooks); the webhooks
/// service sends. A URL is checked here (syntax, https, and where its host resolves: the address
/// rules of `WebhookAddressPolicy`) and again before every send.
enum WebhookRoutes {
    static let idPath: [String: TextRule] = ["id": .uuid]
    /// How long the previous secret keeps signing after a rotation.
    static let rotationOverlap: Duration = .seconds(24 * 3600)

    static var routes: [GatewayRoute] {
        let write = GatewayRoute.Access.tenant(.webhooksWrite, clientKeys: false)
        let read = GatewayRoute.Access.tenant(.webhooksRead, clientKeys: false)
        return [
            GatewayRoute(
                "POST", "/v1/webhooks", id: "createWebhook",
                "Create an endpoint for the listed event types; the answer holds its signing secret, shown only this once",
                access: write, body: WebhookSchemas.createRequest, response: WebhookSchemas.endpointWithSecret,
                status: 201, handler: { g, c in try await g.createWebhook(c) }),
            GatewayRoute(
                "GET", "/v1/webhooks", id: "listWebhooks", "The tenant's endpoints, newest first (never their secrets)",
                access: read, response: WebhookSchemas.endpoint, paginated: true,
                handler: { g, c in try await g.listWebhooks(c) }),
            GatewayRoute(
                "GET", "/v1/webhooks/{id}", id: "getWebhook", "An endpoint: its URL, events, state and health",
                access: read, path: idPath, response: WebhookSchemas.endpoint,
                handler: { g, c in try await g.getWebhook(c) }),
            GatewayRoute(
                "PATCH", "/v1/webhooks/{id}", id: "updateWebhook",
                "Change an endpoint's URL, events, description or enabled (disabling pauses its pending events; enabling sends them again)",
                access: write, path: idPath, body: WebhookSchemas.updateRequest, response: WebhookSchemas.endpoint,
                handler: { g, c in try await g.updateWebhook(c) }),
            GatewayRoute(
                "DELETE", "/v1/webhooks/{id}", id: "deleteWebhook",
                "Delete an endpoint with its pending events and attempts", access: write, path: idPath,
                response: WebhookSchemas.deleted, handler: { g, c in try await g.deleteWebhook(c) }),
            GatewayRoute(
                "POST", "/v1/webhooks/{id}/rotate-secret", id: "rotateWebhookSecret",
                "A new signing secret (shown only in this answer); the previous one keeps signing beside it for 24 hours (two signatures in webhook-signature)",
                access: write, path: idPath, response: WebhookSchemas.endpointWithSecret,
                handler: { g, c in try await g.rotateWebhookSecret(c) }),
            GatewayRoute(
                "POST", "/v1/webhooks/{id}/test", id: "testWebhook",
                "Send a webhook.test event to this endpoint (see its attempts for the answer)",
                access: write, path: idPath, response: WebhookSchemas.testQueued, status: 202,
                handler: { g, c in try await g.testWebhook(c) }),
            GatewayRoute(
                "GET", "/v1/webhooks/{id}/attempts", id: "listWebhookAttempts",
                "An endpoint's attempts, newest first: the webhook-id, type, time, outcome, HTTP status, latency, the first 1 kB of the answer and the error (and webhook.disabled when it was disabled for failing)",
                access: read, path: idPath, response: WebhookSchemas.attempt, paginated: true,
                handler: { g, c in try await g.listWebhookAttempts(c) }),
            GatewayRoute(
                "POST", "/v1/webhooks/{id}/replay", id: "replayWebhook",
                "Send again, with their original webhook-ids, the endpoint's events made since a moment (within the retention)",
                access: write, path: idPath, body: WebhookSchemas.replayRequest, response: WebhookSchemas.replayed,
                status: 202, handler: { g, c in try await g.replayWebhook(c) })
        ]
    }

    static func endpointID(_ context: RequestContext) throws(APIError) -> UUID {
        try Gateway.uuidParameter(context, "id", notFound: .notFound("webhook endpoint"))
    }
}

extension Gateway {
    func createWebhook(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        var v = Validator(try context.request.jsonBody(), allowed: ["url", "events", "description", "enabled"])
        let url = try await webhookURL(&v, required: true)
        let events = webhookEvents(&v, required: true)
        let description = v.string("description", rule: WebhookSchemas.descriptionRule)
        let enabled = v.bool("enabled") ?? true
        try v.check()
        guard let url, let events else { throw APIError.internalError }
        let created = try await webhookEndpoints.create(
            tenantId: tenant, url: url, events: events, description: description, enabled: enabled)
        return .json(created.jsonValue, status: 201)
    }

    func listWebhooks(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let page = try Page(context.request)
        let records: [WebhookEndpointRecord]
        let next: String?
        do {
            (records, next) = try await webhookEndpoints.list(tenantId: tenant, after: page.after, limit: page.limit)
        } catch WebhookStoreError.badCursor {
            throw ValidationIssue.apiError(
                [ValidationIssue(path: "cursor", message: "is not a cursor this API returned")],
                message: "the request is invalid: 1 field is invalid")
        }
        return .json(
            .array(records.map(\.jsonValue)),
            metadata: ["cursor": next.map { .string(Page.cursor(for: $0)) } ?? .null, "hasMore": .bool(next != nil)])
    }

    func getWebhook(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        guard let record = try await webhookEndpoints.get(tenantId: tenant, id: try WebhookRoutes.endpointID(context))
        else { throw APIError.notFound("webhook endpoint") }
        return .json(record.jsonValue)
    }

    func updateWebhook(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try WebhookRoutes.endpointID(context)
        var v = Validator(try context.request.jsonBody(), allowed: ["url", "events", "description", "enabled"])
        var change = WebhookEndpointStore.Change()
        change.url = try await webhookURL(&v, required: false)
        change.events = webhookEvents(&v, required: false)
        change.description = v.patchString("description", rule: WebhookSchemas.descriptionRule)
        if v.has("enabled") {
            if v.isNull("enabled") {
                v.add("enabled", "must be true or false")
            } else {
                change.enabled = v.bool("enabled")
            }
        }
        if v.isNull("url") { v.add("url", "must be a URL") }
        if v.isNull("events") { v.add("events", "must be a non-empty array of event types") }
        try v.check()
        guard let record = try await webhookEndpoints.update(tenantId: tenant, id: id, change) else {
            throw APIError.notFound("webhook endpoint")
        }
        return .json(record.jsonValue)
    }

    func deleteWebhook(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try WebhookRoutes.endpointID(context)
        guard try await webhookEndpoints.delete(tenantId: tenant, id: id) else {
            throw APIError.notFound("webhook endpoint")
        }
        return .json(["id": .string(id.lowercasedText), "deleted": true])
    }

    func rotateWebhookSecret(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        guard
            let rotated = try await webhookEndpoints.rotateSecret(
                tenantId: tenant, id: try WebhookRoutes.endpointID(context), overlap: WebhookRoutes.rotationOverlap)
        else { throw APIError.notFound("webhook endpoint") }
        return .json(rotated.jsonValue)
    }

    func testWebhook(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try WebhookRoutes.endpointID(context)
        switch try await webhookEndpoints.sendTest(tenantId: tenant, id: id) {
        case .notFound: throw APIError.notFound("webhook endpoint")
        case .disabled:
            throw APIError(
                .conflict, "the endpoint is disabled: enable it (PATCH {\"enabled\": true}) to send it events")
        case .queued(let webhookId):
            return .json(
                [
                    "webhookId": .string(webhookId.lowercasedText), "endpointId": .string(id.lowercasedText),
                    "eventType": .string(WebhookEventType.webhookTest.rawValue)
                ], status: 202)
        }
    }

    func listWebhookAttempts(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try WebhookRoutes.endpointID(context)
        let page = try Page(context.request)
        let before = try page.idCursor()
        guard
            let (records, next) = try await webhookEndpoints.attempts(
                tenantId: tenant, endpointId: id, before: before, limit: page.limit)
        else { throw APIError.notFound("webhook endpoint") }
        return .json(
            .array(records.map(\.jsonValue)),
            metadata: [
                "cursor": next.map { .string(Page.cursor(for: String($0))) } ?? .null, "hasMore": .bool(next != nil)
            ])
    }

    func replayWebhook(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try WebhookRoutes.endpointID(context)
        var v = Validator(try context.request.jsonBody(), allowed: ["since"])
        var since: Date?
        if let text = v.string("since", required: true, rule: .length(1, 64)) {
            since = EventTimestamp.parse(text)
            if since == nil {
                v.add("since", "must be an RFC 3339 date-time with an offset, such as 2025-01-31T18:00:00Z")
            }
        }
        try v.check()
        guard let since else { throw APIError.internalError }
        guard let queued = try await webhookEndpoints.replay(tenantId: tenant, id: id, since: since) else {
            throw APIError.notFound("webhook endpoint")
        }
        return .json(
            [
                "endpointId": .string(id.lowercasedText), "queued": .int(Int64(queued)),
                "since": .string(WebhookTime.text(since))
            ], status: 202)
    }

    // MARK: - Fields

    /// `url`: the syntax, the scheme, then where the host resolves now (the address rules).
    private func webhookURL(_ v: inout Validator, required: Bool) async throws -> String? {
        guard let text = v.string("url", required: required, rule: WebhookSchemas.urlRule) else { return nil }
        let policy = WebhookAddressPolicy(allowPrivate: configuration.webhooksAllowPrivate)
        switch WebhookURL.parse(text, allowHTTP: policy.allowPrivate) {
        case .failure(let problem):
            v.add("url", problem.message)
            return nil
        case .success(let url):
            if case .failure(let problem) = await webhookResolver.check(url, policy: policy) {
                v.add("url", "is refused: " + problem.message)
                return nil
            }
            return text
        }
    }

    /// `events`: a non-empty list of distinct subscribable types.
    private func webhookEvents(_ v: inout Validator, required: Bool) -> [WebhookEventType]? {
        guard let value = v.object["events"], !value.isNull else {
            if required { v.add("events", "is required") }
            return nil
        }
        guard let list = value.arrayValue, !list.isEmpty else {
            v.add("events", "must be a non-empty array of event types")
            return nil
        }
        var types: [WebhookEventType] = []
        var problem = false
        for (index, item) in list.enumerated() {
            guard let text = item.stringValue, let type = WebhookEventType(rawValue: text), type != .webhookTest else {
                v.add("events[\(index)]", "must be one of: " + WebhookSchemas.eventTypes.joined(separator: ", "))
                problem = true
                continue
            }
            if types.contains(type) {
                v.add("events[\(index)]", "is listed twice")
                problem = true
            }
            types.append(type)
        }
        return problem ? nil : types
    }
}
