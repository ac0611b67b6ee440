import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitPush
import Foundation

/// Direct messages (a short `to` list: a transactional send, a workflow step, a fallback), many
/// at once: what the `bk:messages:direct` consumer does with a batch of entries.
///
/// 1. ONE statement takes every `queued` message of the batch whose tenant can send, writes their
///    devices as ONE chunk per tenant already claimed by this replica, and marks the messages
///    `fanned_out` with their audience size (`Ledger.takeDirect`; a message without any device is
///    completed right after). No fan-out page, no `bk:deliveries` entry, no second claim: a
///    one-subscriber message costs its row's update and its share of one chunk row.
/// 2. Every push goes out at once, one batch per tenant and (team, environment) client (a device
///    named by several messages of the batch gets them in turn, in the order they were made).
/// 3. ONE statement per chunk records every delivery once, with its outcome, and completes the
///    chunk's messages (each lies wholly in it) (`Ledger.record`).
///
/// A crash after 1 leaves the chunks claimed: another replica's sweeper takes them over after
/// `BUZZKIT_SENDER_STALE_SENDING` and sends them under the same apns-ids and collapse ids, as for
/// any chunk. Entries this does not take (the message is done or being taken elsewhere, its tenant
/// cannot send, it was fanning out) go through `FanOut.handle`, which ends them as before.
struct DirectMessages: Sendable {
    let ledger: Ledger
    let credentials: TenantCredentialStore
    let sender: DeliverySender
    let instance: String
    let logger: Logger
    var metrics: SenderMetrics = .unregistered()

    /// Takes what it can of `entries` (see the type); answers the message ids it took.
    func take(_ entries: [MessageEntry]) async throws -> Set<UUID> {
        let started = ContinuousClock.now
        var tenants: [UUID: TenantAPNs] = [:]
        for tenant in Set(entries.map(\.tenantId)) {
            let apns = try await credentials.get(tenant)
            if apns.problem == nil, apns.credentials != nil, apns.bundleId != nil { tenants[tenant] = apns }
        }
        var seen = Set<UUID>()  // an entry re-added by the outbox sweeper may repeat a message
        let ids = entries.filter { tenants[$0.tenantId] != nil && seen.insert($0.messageId).inserted }.map(\.messageId)
        guard !ids.isEmpty else { return [] }
        let messages = try await ledger.takeDirect(
            ids, instance: instance, maxSubscribers: MessageTarget.maxDirectSubscribers)
        var taken = Set<UUID>()
        var chunks: [UUID: ClaimedChunk] = [:]  // by tenant
        var order: [UUID] = []
        var known: [UUID: PreparedMessage] = [:]
        for message in messages {
            taken.insert(message.id)
            guard let chunkId = message.chunkId else { continue }  // no active device
            let tenant = message.tenantId
            if let apns = tenants[tenant] {
                // Unsendable content is the ledger's to record per device (message_invalid).
                known[message.id] = try? PreparedMessageCache.prepare(
                    id: message.id, kind: message.kind, contentJSON: message.content, createdAt: message.createdAt,
                    bundleId: apns.bundleId ?? "", decided: message.decided)
            }
            if chunks[tenant] == nil {
                chunks[tenant] = ClaimedChunk(id: chunkId, tenantId: tenant, messageId: nil, devices: [])
                order.append(tenant)
            }
            chunks[tenant]?.devices += message.devices
        }
        if !taken.isEmpty { metrics.directBatch.observe(Double(taken.count)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for tenant in order {
                guard let chunk = chunks[tenant] else { continue }
                group.addTask { [known] in try await sender.send(chunk, known: known, started: started) }
            }
            try await group.waitForAll()
        }
        return taken
    }
}
