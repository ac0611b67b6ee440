import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitWire
import Foundation
import Synchronization

/// A message ready to send: its content read back and its payload encoded once, shared by every
/// delivery of the message (only the device token and the apns-id change per push).
struct PreparedMessage: Sendable {
    var id: UUID
    /// How the stored content became `template` (`messages.kind`).
    var kind: MessageKind
    /// The content's `expiresAt` (pushes only; workflow silent pushes never expire).
    var expiresAt: Date?
    /// The request for every device, with an empty token.
    var template: APNsRequest
    /// The category the message names (pushes only): the send policy's (`Policy.decide`) and the
    /// notification's `aps.category`. nil: the tenant's default category governs it.
    var category: String? = nil
    /// The policy its sender decided already (a workflow's send step, decided and counted with
    /// the run): every device gets it and nothing is decided or counted again. nil: not decided;
    /// `.some(nil)`: let through; `.some(reason)`: every delivery suppressed.
    var decided: SuppressionReason?? = nil

    /// Whether the send policy decides its deliveries here: a tenant's push its sender did not
    /// decide (a silent workflow push that hands a plan to the device is not a notification a
    /// person opts out of).
    var governedByPolicy: Bool { kind == .push && decided == nil }

    /// True when `expiresAt` passed: deliveries end `expired` without being sent.
    func isExpired(now: Date) -> Bool { expiresAt.map { $0 < now } ?? false }
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
            """
            SELECT kind, content, created_at, policy_decided_at, suppressed_reason
            FROM messages
            WHERE id = $1::uuid AND \(LedgerTime.prune("message_time", id: "$1::uuid")) AND tenant_id = $2::uuid
            """, [id, tenant])
        guard let row = rows.first else { return nil }
        let prepared = try Self.prepare(
            id: id, kind: try row.decode(String.self, at: 0), contentJSON: try row.decode(JSONValue.self, at: 1),
            createdAt: try row.decode(Date.self, at: 2), bundleId: bundleId,
            decided: try Ledger.decidedPolicy(row, at: 3))
        cache.withLock {
            if $0.count >= 1000 { $0.removeAll() }
            $0[id] = prepared
        }
        return prepared
    }

    /// `prepare` for `messages.kind` as stored: a kind this build does not know is unsendable.
    static func prepare(
        id: UUID, kind: String, contentJSON: JSONValue, createdAt: Date, bundleId: String,
        decided: SuppressionReason?? = nil
    ) throws -> PreparedMessage {
        guard let known = MessageKind(rawValue: kind) else {
            throw UnsendableMessage(description: "unknown message kind '\(kind)'")
        }
        var prepared = try prepare(
            id: id, kind: known, contentJSON: contentJSON, createdAt: createdAt, bundleId: bundleId)
        if prepared.kind == .push { prepared.decided = decided }
        return prepared
    }

    /// Builds the request every device of the message gets, by kind: a push re-validates its
    /// stored content as of its creation (so an `expiresAt` that passed since is not an error
    /// here); a workflow's `local_plan` / `local_cancel` is a silent push (`aps` with only
    /// `content-available`, push type `background`, priority 5) carrying `bk.local` (the stored
    /// plan) or `bk.cancel` (the run id). The payload is encoded once.
    static func prepare(
        id: UUID, kind: MessageKind, contentJSON: JSONValue, createdAt: Date, bundleId: String
    ) throws -> PreparedMessage {
        let messageId = id.lowercasedText
        switch kind {
        case .push:
            switch MessageContent.validate(contentJSON, now: createdAt) {
            case .failure(let rejection):
                throw UnsendableMessage(description: rejection.issues.map(\.description).joined(separator: "; "))
            case .success(let content):
                let template = APNsRequest(deviceToken: "", topic: bundleId, content: content, messageId: messageId)
                return PreparedMessage(
                    id: id, kind: kind, expiresAt: content.expiresAt, template: template, category: content.category)
            }
        case .localPlan:
            guard let plan = contentJSON["local"].flatMap(LocalPlan.init(json:)) else {
                throw UnsendableMessage(description: "a local_plan message without a readable plan under 'local'")
            }
            return silent(id: id, kind: kind, .local(plan, messageId: messageId), bundleId: bundleId)
        case .localCancel:
            guard let runId = contentJSON["cancel"]?["runId"]?.stringValue, !runId.isEmpty else {
                throw UnsendableMessage(description: "a local_cancel message without 'cancel.runId'")
            }
            return silent(id: id, kind: kind, .cancel(runId: runId, messageId: messageId), bundleId: bundleId)
        case .liveActivity:
            throw UnsendableMessage(description: "a live_activity message is sent by the liveactivity service")
        }
    }

    private static func silent(id: UUID, kind: MessageKind, _ payload: PushPayload, bundleId: String)
        -> PreparedMessage
    {
        let template = APNsRequest.silent(
            deviceToken: "", topic: bundleId, payload: payload, messageId: id.lowercasedText)
        return PreparedMessage(id: id, kind: kind, expiresAt: nil, template: template)
    }
}
