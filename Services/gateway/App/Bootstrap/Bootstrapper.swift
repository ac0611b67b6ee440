import BuzzKitCrypto
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// Creates the first workspace and its workspace key (every scope), and optionally a demo tenant
/// with a tenant key (every tenant scope) and a client key. Used by `buzzkit-admin bootstrap`.
public struct Bootstrapper: Sendable {
    public struct DemoTenant: Sendable {
        public var name: String
        public var teamID: String?
        public var keyID: String?
        /// The .p8 PEM text.
        public var privateKey: String?
        public var bundleID: String?
        public var environment: String
        public init(
            name: String, teamID: String? = nil, keyID: String? = nil, privateKey: String? = nil,
            bundleID: String? = nil, environment: String = "sandbox"
        ) {
            self.name = name
            self.teamID = teamID
            self.keyID = keyID
            self.privateKey = privateKey
            self.bundleID = bundleID
            self.environment = environment
        }
    }

    public struct Result: Sendable {
        public var workspaceID: UUID
        public var workspaceKey: String
        public var tenantID: UUID?
        public var tenantKey: String?
        public var clientKey: String?

        /// `NAME=value` lines for a shell or an env file.
        public var shellLines: [String] {
            var lines = ["BUZZKIT_WORKSPACE=\(workspaceID.lowercasedText)", "BUZZKIT_WORKSPACE_KEY=\(workspaceKey)"]
            if let tenantID { lines.append("BUZZKIT_TENANT=\(tenantID.lowercasedText)") }
            if let tenantKey { lines.append("BUZZKIT_TENANT_KEY=\(tenantKey)") }
            if let clientKey { lines.append("BUZZKIT_CLIENT_KEY=\(clientKey)") }
            return lines
        }
    }

    public struct BootstrapError: Error, CustomStringConvertible {
        public var description: String
    }

    let postgres: PostgresClient
    /// Needed only to seal a demo tenant's .p8 key.
    let secretKey: [UInt8]?

    public init(postgres: PostgresClient, secretKey: [UInt8]?) {
        self.postgres = postgres
        self.secretKey = secretKey
    }

    /// Whether any workspace exists (for `--if-empty`).
    public func hasWorkspace() async throws -> Bool {
        try await !postgres.query("SELECT 1 FROM workspaces LIMIT 1").isEmpty
    }

    public func run(workspace name: String, demo: DemoTenant?) async throws -> Result {
        let store = KeyStore(postgres: postgres)
        var sealed: Data?
        let tenantID = UUID()
        if let demo, let pem = demo.privateKey {
            guard let secretKey else {
                throw BootstrapError(description: "BUZZKIT_SECRET_KEY is required to store an APNs key")
            }
            do {
                _ = try ES256PrivateKey(pem: pem)
                sealed = Data(
                    try AESGCM(key: secretKey).seal(
                        Array(pem.utf8),
                        associatedData: Array(tenantID.lowercasedText.utf8)))
            } catch {
                throw BootstrapError(description: "the APNs key file is not a valid .p8 key: \(error)")
            }
        }
        return try await postgres.withTransaction { tx in
            let rows = try await tx.query("INSERT INTO workspaces (name) VALUES ($1) RETURNING id", [name])
            guard let workspaceID = try rows.first?.decode(UUID.self, at: 0) else {
                throw BootstrapError(description: "creating the workspace returned nothing")
            }
            let workspaceKey = try await store.create(
                workspaceID: workspaceID, tenantID: nil, kind: .workspace,
                name: "bootstrap workspace key", scopes: Scope.all, on: tx)
            var result = Result(workspaceID: workspaceID, workspaceKey: workspaceKey.secret)
            if let demo {
                try await tx.execute(
                    """
                    INSERT INTO tenants (id, workspace_id, name, apns_team_id, apns_key_id, apns_private_key, apns_bundle_id,
                                         apns_environment)
                    VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6, $7, $8)
                    """,
                    [tenantID, workspaceID, demo.name, demo.teamID, demo.keyID, sealed, demo.bundleID, demo.environment]
                )
                result.tenantID = tenantID
                result.tenantKey = try await store.create(
                    workspaceID: workspaceID, tenantID: tenantID, kind: .tenant,
                    name: "demo tenant key", scopes: Scope.tenantScopes, on: tx
                ).secret
                result.clientKey = try await store.create(
                    workspaceID: workspaceID, tenantID: tenantID, kind: .client,
                    name: "demo client key", scopes: Scope.clientScopes, on: tx
                ).secret
            }
            return result
        }
    }
}
