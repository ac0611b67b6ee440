/// What an API key may act on.
///
/// - `workspace` (`bk_ws_...`): any tenant of its workspace, chosen per request with the
///   `BuzzKit-Tenant` header; the only kind that may administer tenants and keys.
/// - `tenant` (`bk_tk_...`): its own tenant only.
/// - `client` (`bk_ck_...`): a key safe to ship in an app: `events:write`, device registration and
///   identify on its own tenant, nothing else.
public enum APIKeyKind: String, Sendable, Hashable, CaseIterable {
    case workspace
    case tenant
    case client

    /// The visible start of every key of this kind.
    public var keyPrefix: String {
        switch self {
        case .workspace: "bk_ws_"
        case .tenant: "bk_tk_"
        case .client: "bk_ck_"
        }
    }
}
