import Foundation

/// One registered installation of an app, as the gateway authenticated it from the
/// `BuzzKit-Installation` header: which tenant it belongs to and which identities it may act for.
public struct InstallationRecord: Sendable, Hashable {
    public var id: UUID
    public var tenantID: UUID
    /// The API key that registered it (revoking that key revokes the installation).
    public var apiKeyID: UUID
    public var anonymousID: String
    /// Set by identify; nil until the installation identified.
    public var subscriberID: String?
    /// The SHA-256 of the token it was authenticated with (the cache key).
    var tokenHash: [UInt8] = []

    public init(id: UUID, tenantID: UUID, apiKeyID: UUID, anonymousID: String, subscriberID: String?) {
        self.id = id
        self.tenantID = tenantID
        self.apiKeyID = apiKeyID
        self.anonymousID = anonymousID
        self.subscriberID = subscriberID
    }

    /// The ids a client key using this installation may write for: the anonymous id and, once
    /// identified, the subscriber id.
    public var identities: Set<String> {
        var ids: Set<String> = [anonymousID]
        if let subscriberID { ids.insert(subscriberID) }
        return ids
    }
}
