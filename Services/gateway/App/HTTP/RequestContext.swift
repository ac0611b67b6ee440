import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// What a route handler gets: the request, the authenticated key and the tenant the request acts
/// on (resolved from the key and the `BuzzKit-Tenant` header before the handler runs).
public struct RequestContext: Sendable {
    public var request: Request
    /// nil only on routes that need no key.
    public var key: APIKeyRecord?
    /// The tenant of a tenant route; nil on admin and public routes.
    public var tenantID: UUID?
    /// The installation a client key acts for (`BuzzKit-Installation`); nil for server keys and
    /// on `POST /v1/installations`.
    public var installation: InstallationRecord?

    /// The workspace of the key; admin routes act on it.
    var workspaceID: UUID {
        get throws {
            guard let key else { throw APIErrorShortcuts.unauthorized }
            return key.workspaceID
        }
    }

    /// The tenant of a tenant route (always set there by the pipeline).
    var tenant: UUID {
        get throws {
            guard let tenantID else { throw APIErrorShortcuts.tenantRequired }
            return tenantID
        }
    }

    func parameter(_ name: String) -> String { request.pathParameters[name] ?? "" }
}

enum APIErrorShortcuts {
    static let unauthorized = APIError(.unauthorized, "an API key is required")
    static let tenantRequired = APIError(.tenantRequired, "name the tenant in the BuzzKit-Tenant header")
}
