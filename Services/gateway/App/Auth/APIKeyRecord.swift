import Foundation

/// What the gateway knows about an authenticated key: enough to authorise a request without
/// touching the database again.
public struct APIKeyRecord: Sendable, Hashable {
    public var id: UUID
    public var workspaceID: UUID
    /// The key's tenant; nil for workspace keys.
    public var tenantID: UUID?
    public var kind: APIKeyKind
    public var scopes: Set<Scope>

    public init(id: UUID, workspaceID: UUID, tenantID: UUID?, kind: APIKeyKind, scopes: Set<Scope>) {
        self.id = id
        self.workspaceID = workspaceID
        self.tenantID = tenantID
        self.kind = kind
        self.scopes = scopes
    }
}
