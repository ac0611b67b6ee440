import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import Foundation
import Synchronization

/// Decides which tenant a request acts on, as the public API defines it:
///
/// - tenant and client keys act on their own tenant; a `BuzzKit-Tenant` header naming another
///   tenant is `403 forbidden_tenant` (never silently ignored);
/// - workspace keys name the tenant in `BuzzKit-Tenant`: missing `400 tenant_required`; a tenant
///   that does not exist or belongs to another workspace `404 tenant_not_found` (the same answer,
///   so a key cannot probe other workspaces).
///
/// Tenant -> workspace never changes, so found tenants are cached (`ttl`, default 5 minutes).
final class TenantResolver: Sendable {
    static let header = "BuzzKit-Tenant"

    let postgres: PostgresClient
    let ttl: Duration
    private let cache = Mutex<[UUID: (workspace: UUID, expires: ContinuousClock.Instant)]>([:])

    init(postgres: PostgresClient, ttl: Duration = .seconds(300)) {
        self.postgres = postgres
        self.ttl = ttl
    }

    func resolve(key: APIKeyRecord, header: String?) async throws -> UUID {
        switch resolveCached(key: key, header: header) {
        case .tenant(let tenant): return tenant
        case .refused(let error): throw error
        case .miss(let tenant):
            guard try await workspace(of: tenant) == key.workspaceID else { throw Self.notFound }
            return tenant
        }
    }

    enum Cached: Sendable {
        case tenant(UUID)
        case refused(APIError)
        /// A workspace key naming a tenant whose workspace is not cached: ask `resolve`.
        case miss(UUID)
    }

    /// The decision without I/O when the key and the cache suffice (runs on the network thread).
    ///
    /// A header that is present must hold a tenant id (a UUID), for every kind of key: an empty or
    /// malformed value is `404 tenant_not_found` (no tenant has it), never ignored.
    func resolveCached(key: APIKeyRecord, header: String?) -> Cached {
        var named: UUID?
        if let header {
            guard let tenant = UUID(uuidText: HTTPHeaders.trimmingWhitespace(header)) else {
                return .refused(Self.malformed)
            }
            named = tenant
        }
        if let own = key.tenantID {
            guard let named else { return .tenant(own) }
            guard named == own else { return .refused(Self.forbidden) }
            return .tenant(own)
        }
        guard let tenant = named else { return .refused(Self.required) }
        let now = ContinuousClock.now
        if let hit = cache.withLock({ $0[tenant] }), hit.expires > now {
            return hit.workspace == key.workspaceID ? .tenant(tenant) : .refused(Self.notFound)
        }
        return .miss(tenant)
    }

    static let forbidden = APIError(
        .forbiddenTenant, "this key belongs to another tenant than the BuzzKit-Tenant header names")
    static let required = APIError(.tenantRequired, "a workspace key must name the tenant in the BuzzKit-Tenant header")

    static let notFound = APIError(.tenantNotFound, "no such tenant in this workspace")
    static let malformed = APIError(.tenantNotFound, "the BuzzKit-Tenant header must be a tenant id (a UUID)")

    /// The tenant's workspace, nil when there is no such tenant.
    func workspace(of tenant: UUID) async throws -> UUID? {
        let now = ContinuousClock.now
        if let hit = cache.withLock({ $0[tenant] }), hit.expires > now { return hit.workspace }
        let rows = try await postgres.query("SELECT workspace_id FROM tenants WHERE id = $1::uuid", [tenant])
        guard let workspace = try rows.first?.decode(UUID.self, at: 0) else { return nil }
        cache.withLock { cache in
            if cache.count > 100_000 { cache.removeAll() }
            cache[tenant] = (workspace, now + ttl)
        }
        return workspace
    }
}
