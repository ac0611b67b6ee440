import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// `POST /v1/installations {anonymousId}`: an app installation registers once and receives its own
/// token (`bk_inst_...`, shown once, stored hashed), which it sends in the `BuzzKit-Installation`
/// header on every other request made with a client key. Client keys may call it (and keys with
/// `subscribers:write`). An anonymous id that already has a live installation in the tenant is
/// `409 installation_exists`, so nobody can take over another installation's identity.
enum InstallationRoutes {
    static var routes: [GatewayRoute] {
        var register = GatewayRoute(
            "POST", "/v1/installations", id: "createInstallation",
            "Register an app installation and receive its BuzzKit-Installation token (shown once)",
            access: .tenant(.subscribersWrite, clientKeys: true),
            body: Schema.object(
                ["anonymousId": Schema.string(FieldRules.installationAnonymousIDRule)], required: ["anonymousId"]),
            response: Schema.object([
                "id": Schema.uuid, "anonymousId": Schema.string(), "subscriberId": Schema.nullable(Schema.string()),
                "token": Schema.string("bk_inst_...: send it as the BuzzKit-Installation header; shown only here"),
                "createdAt": Schema.timestamp
            ]),
            status: 201, errors: [.installationExists], handler: { g, c in try await g.createInstallation(c) })
        register.registersInstallation = true
        return [register]
    }
}

extension Gateway {
    func createInstallation(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        guard let key = context.key else { throw APIErrorShortcuts.unauthorized }
        let body = try context.request.jsonBody()
        var v = Validator(body, allowed: ["anonymousId"])
        let anonymous = v.string("anonymousId", required: true, rule: FieldRules.installationAnonymousIDRule)
        try v.check()
        guard let anonymous else { throw APIError.internalError }
        guard
            let created = try await installationStore.create(tenantID: tenant, apiKeyID: key.id, anonymousID: anonymous)
        else {
            throw APIError(
                .installationExists, "an installation with this anonymousId exists already",
                details: ["anonymousId": .string(anonymous)])
        }
        installationCache.forget(created.record.tokenHash)
        return .json(created.json, status: 201)
    }
}
