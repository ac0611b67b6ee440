/// A permission an API key holds. Every route names the one scope it needs.
///
/// The list is fixed by the public API: `tenants:write`, `keys:write`, `messages:send`,
/// `messages:read`, `events:write`, `subscribers:read`, `subscribers:write`, `workflows:read`,
/// `workflows:write`, `webhooks:read`, `webhooks:write`, `settings:read`, `settings:write` (categories
/// and the tenant's settings; keys that held `workflows:read` / `workflows:write` before migration
/// 0021 were given them). A key lacking the scope of a route gets `403 forbidden_scope` naming it.
public struct Scope: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        guard Self.all.contains(where: { $0.rawValue == rawValue }) else { return nil }
        self.rawValue = rawValue
    }
    private init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }
    public static func < (a: Scope, b: Scope) -> Bool { a.rawValue < b.rawValue }

    public static let tenantsWrite = Scope("tenants:write")
    public static let keysWrite = Scope("keys:write")
    public static let messagesSend = Scope("messages:send")
    public static let messagesRead = Scope("messages:read")
    public static let eventsWrite = Scope("events:write")
    public static let subscribersRead = Scope("subscribers:read")
    public static let subscribersWrite = Scope("subscribers:write")
    public static let workflowsRead = Scope("workflows:read")
    public static let workflowsWrite = Scope("workflows:write")
    public static let webhooksRead = Scope("webhooks:read")
    public static let webhooksWrite = Scope("webhooks:write")
    public static let settingsRead = Scope("settings:read")
    public static let settingsWrite = Scope("settings:write")

    /// Every scope; a bootstrap workspace key holds all of them.
    public static let all: [Scope] = [
        .tenantsWrite, .keysWrite, .messagesSend, .messagesRead, .eventsWrite,
        .subscribersRead, .subscribersWrite, .workflowsRead, .workflowsWrite, .webhooksRead, .webhooksWrite,
        .settingsRead, .settingsWrite
    ]

    /// Scopes a tenant key may hold: everything but the workspace administration scopes.
    public static let tenantScopes: [Scope] = all.filter { $0 != .tenantsWrite && $0 != .keysWrite }

    /// Scopes a client (SDK) key may hold. Client keys may also register devices and identify,
    /// on the routes that allow client keys explicitly.
    public static let clientScopes: [Scope] = [.eventsWrite]

    /// The scopes a key of `kind` may hold (`POST /v1/api-keys` refuses any other).
    public static func allowed(for kind: APIKeyKind) -> [Scope] {
        switch kind {
        case .workspace: all
        case .tenant: tenantScopes
        case .client: clientScopes
        }
    }
}
