import BuzzKitAPNs
import BuzzKitPostgres
import BuzzKitWire
import Foundation
import Synchronization

/// A message ready to send: its content read back and its payload encoded once, shared by every
/// delivery of the message (only the device token and the apns-id change per push).
struct PreparedMessage: Sendable {
    var id: UUID
    var content: MessageContent
    /// The request for every device, with an empty token (`APNsRequest(content:messageId:)`).
    var template: APNsRequest

    /// True when `expiresAt` passed: deliveries end `expired` without being sent.
    func isExpired(now: Date) -> Bool { content.expiresAt.map { $0 < now } ?? false }
}

/// Why a stored message cannot be sent (content that no longer validates: it is failed, not retried).
struct UnsendableMessage: Error, CustomStringConvertible {
    var description: String
}

/// Prepared messages by id, loaded from `messages` on first use. Bounded: cleared at 1000 entries.
final class PreparedMessageCache: Sendable {
    private let postgres: PostgresClient
    private let cache = Mutex<[UUID: PreparedMessage]>([:])

    init(postgres: PostgresClient) { self.postgres = postgres }

    /// The message, or nil when it does not exist for this tenant.
    func get(_ id: UUID, tenant: UUID, bundleId: String) async throws -> PreparedMessage? {
        if let hit = cache.withLock({ $0[id] }), hit.template.topic == bundleId { return hit }
        let rows = try await postgres.query(
            "SELECT content, created_at FROM messages WHERE id = $1::uuid AND tenant_id = $2::uuid", [id, tenant])
        guard let row = rows.first else { return nil }
        let json = try row.decode(JSONValue.self, at: 0)
        let created = try row.decode(Date.self, at: 1)
        let prepared = try Self.prepare(id: id, contentJSON: json, createdAt: created, bundleId: bundleId)
        cache.withLock {
            if $0.count >= 1000 { $0.removeAll() }
            $0[id] = prepared
        }
        return prepared
    }

    /// Re-validates the stored content as of its creation (so an `expiresAt` that passed since is
    /// not an error here) and encodes the payload once.
    static func prepare(id: UUID, contentJSON: JSONValue, createdAt: Date, bundleId: String) throws -> PreparedMessage {
        switch MessageContent.validate(contentJSON, now: createdAt) {
        case .failure(let rejection):
            throw UnsendableMessage(description: rejection.issues.map(\.description).joined(separator: "; "))
        case .success(let content):
            let template = APNsRequest(deviceToken: "", topic: bundleId, content: content, messageId: id.lowercasedText)
            return PreparedMessage(id: id, content: content, template: template)
        }
    }
}
