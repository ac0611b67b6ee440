import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitPolicy
import BuzzKitPush
import Foundation

/// Sends chunks of deliveries (`bk:deliveries` entries, and the direct batches `DirectMessages`
/// claims itself) and records them in the ledger (`BuzzKitLedger`).
///
/// 1. Claim: ONE small update makes this replica the chunk's holder (`Ledger.claim`); a chunk
///    another replica holds or that was recorded already is skipped, so a redelivered or duplicated
///    entry never sends a device twice.
/// 2. A device whose message expired ends `expired` without a push; a tenant without usable
///    credentials ends its devices `failed` (`apns_credentials_missing` / `apns_credentials_invalid`)
///    with no APNs call; a message that no longer validates, `failed` / `message_invalid`.
/// 3. The send policy decides the pushes left, ONE statement for the chunk (`Policy.decide`:
///    preferences, categories, frequency caps counted exactly under concurrency; a push naming no
///    category, for a tenant with no default category and no cap without a category, is decided
///    by what the claim read, `UncategorizedPolicy`, with no statement): a device whose
///    (message, subscriber) it holds back ends `suppressed` with the reason, with no APNs request.
///    A message whose sender decided already (`messages.policy_decided_at`: a workflow's send
///    step) gets that decision on every device and is neither decided nor counted again.
/// 4. Every other device is pushed at once through the (team, environment) client: the first
///    attempts as ONE batch (`APNsClient.sendWithRetries(batch:)`), then `RetryPolicy` retries. Each
///    push carries the delivery's id as `apns-id` and the message's collapse id. A device named by
///    several messages of the chunk (a direct batch) gets them in turn, in the order they were made.
///    Each result becomes the device's outcome through the ledger's one mapping
///    (`DeliveryOutcome(device:result:)`).
/// 5. Record: ONE statement writes every delivery once with its outcome and attempts, deletes the
///    chunk and completes a direct batch's messages (`Ledger.record`). A fan-out chunk's message
///    is tested after the commit (`Ledger.completeIfDone`: one index probe while other chunks of it
///    are pending; another replica may have recorded its other last chunk at the same moment, and
///    whichever commits last sees both gone).
///
/// A replica that stops between 1 and 5 leaves its chunk claimed; another replica's sweeper takes
/// it over after `staleSending` (`takeOverStaleClaims`) and sends it again under the same apns-ids.
/// One that stops between 5 and the completion test leaves the message `fanned_out`: the outbox
/// sweeper completes it (`Ledger.completeStragglers`).
struct DeliverySender: Sendable {
    let ledger: Ledger
    let credentials: TenantCredentialStore
    let messages: PreparedMessageCache
    let clients: APNsClientPool
    let configuration: SenderConfiguration
    let instance: String
    let logger: Logger
    var metrics: SenderMetrics = .unregistered()
    /// The send policy, on the ledger's pool.
    var policy: Policy { Policy(postgres: ledger.postgres) }

    func handle(_ entry: DeliveryChunk) async throws {
        let started = ContinuousClock.now
        guard
            let (chunk, uncategorized) = try await ledger.claim(
                entry.chunkId, tenant: entry.tenantId, instance: instance, alongside: Self.uncategorizedPolicy)
        else {
            return
        }
        metrics.claim.observe(ContinuousClock.now - started)
        try await send(chunk, uncategorized: uncategorized, started: started)
    }

    /// What the send policy decides for the chunk's pushes naming no category, read by the claim
    /// (`UncategorizedPolicy`; nil when the tenant's settings leave more to decide): a chunk of an
    /// uncategorized message then needs no decision statement.
    /// The claimed row's columns are named with the table: inside the expression's subqueries
    /// a bare `tenant_id` is the subquery's own (`policy_settings.tenant_id`, ...).
    static let uncategorizedPolicy = ClaimAlongside(
        expression: Policy.uncategorizedSQL(
            tenant: "delivery_chunks.tenant_id", subscribers: "delivery_chunks.subscriber_ids"),
        decode: { try Policy.uncategorized($0, at: $1) })

    /// What a message's sending needs: the tenant's credentials and the prepared message, or why
    /// it cannot be sent.
    struct Prepared: Sendable {
        var tenant: TenantAPNs
        var message: PreparedMessage?
        var unsendable: String?
    }

    /// Sends every device of a chunk this replica holds, then records it. `known`: messages the
    /// caller prepared already (a direct batch read them with its claim); the others are read.
    /// `uncategorized`: the policy's answer for pushes naming no category, read with the claim.
    func send(
        _ chunk: ClaimedChunk, known: [UUID: PreparedMessage] = [:], uncategorized: UncategorizedPolicy? = nil,
        started: ContinuousClock.Instant
    ) async throws {
        let tenant = try await credentials.get(chunk.tenantId)
        var prepared: [UUID: Prepared] = [:]
        var last: UUID?
        for device in chunk.devices where device.messageId != last {
            last = device.messageId
            guard prepared[device.messageId] == nil else { continue }
            if let message = known[device.messageId] {
                prepared[device.messageId] = Prepared(tenant: tenant, message: message)
            } else {
                prepared[device.messageId] = try await prepare(
                    tenant, message: device.messageId, tenantId: chunk.tenantId)
            }
        }
        let sendStarted = ContinuousClock.now
        let now = Date()
        let plan = ChunkPlan(chunk.devices, prepared, now: now)
        let verdicts = try await decidePolicy(chunk, plan, uncategorized: uncategorized)
        // Looked up per device only when some verdict holds a push back (a chunk the policy lets
        // through whole, the usual case, costs no hashing per device).
        let suppressing = verdicts.values.contains { $0.suppressed != nil }
        var outcomes: [DeliveryOutcome] = []
        outcomes.reserveCapacity(chunk.devices.count)
        // Rounds: a device's n-th push of this chunk goes in round n (positions in the chunk).
        var rounds: [[Int]] = []
        var tokens = Set<String>(minimumCapacity: chunk.devices.count)
        var repeated: [String: Int] = [:]
        for (position, device) in chunk.devices.enumerated() {
            guard let messagePlan = plan.forDevice(position) else { continue }
            if var ended = messagePlan.unsent {
                ended.device = device
                outcomes.append(ended)
                continue
            }
            guard messagePlan.message != nil else { continue }
            let decided =
                messagePlan.decided ?? (suppressing ? verdicts[messagePlan.candidate(device)]?.suppressed : nil)
            if let reason = decided {
                outcomes.append(DeliveryOutcome(device: device, suppressed: reason))
                continue
            }
            var round = 0
            if !tokens.insert(device.token).inserted {
                round = repeated[device.token, default: 1]
                repeated[device.token] = round + 1
            }
            if round == rounds.count { rounds.append([]) }
            rounds[round].append(position)
        }
        if let apns = tenant.credentials {
            for round in rounds { await send(round, of: chunk.devices, plan, credentials: apns, into: &outcomes) }
        }
        if !rounds.isEmpty { metrics.send.observe(ContinuousClock.now - sendStarted) }
        let recording = ContinuousClock.now
        // A fan-out chunk's message is completed by the test after the commit (below), not in
        // the record's statement (`RecordCompletion.afterCommit`); a direct batch's messages, each
        // wholly in its chunk, in the statement.
        let completed = try await ledger.record(
            [ChunkRecord(chunk: chunk, outcomes: outcomes)], instance: instance,
            templates: prepared.compactMapValues(\.message?.template),
            completion: chunk.messageId == nil ? .inStatement : .afterCommit)
        if let message = chunk.messageId, !completed.contains(message) {
            await completeIfDone(message)
        }
        let done = ContinuousClock.now
        metrics.record.observe(done - recording)
        metrics.total.observe(done - started)
        metrics.deliveries.increment(by: outcomes.count)
        metrics.requests.increment(by: outcomes.reduce(0) { $0 + $1.attempts.count })
    }

    /// The policy's verdicts for the chunk's pushes that would go out (ONE statement, counting
    /// what it lets through against the caps; none when every push names no category and the
    /// claim read what the policy decides for those); none asked when nothing is to be sent.
    private func decidePolicy(_ chunk: ClaimedChunk, _ plan: ChunkPlan, uncategorized: UncategorizedPolicy?)
        async throws -> [PolicyCandidate: PolicyVerdict]
    {
        var candidates: [PolicyCandidate] = []
        for (position, device) in chunk.devices.enumerated() {
            guard let messagePlan = plan.forDevice(position), messagePlan.unsent == nil, messagePlan.governedByPolicy
            else { continue }
            candidates.append(messagePlan.candidate(device))
        }
        guard !candidates.isEmpty else { return [:] }
        return try await policy.decide(
            candidates, tenant: chunk.tenantId, now: plan.now, uncategorized: uncategorized)
    }

    /// The completion test after a fan-out chunk's commit. The chunk is recorded whatever happens
    /// here: a failure is left to the outbox sweeper (`Ledger.completeStragglers`).
    private func completeIfDone(_ message: UUID) async {
        do {
            try await ledger.completeIfDone([message])
        } catch {
            logger.warning(
                "message completion test failed", metadata: ["message.id": message.lowercasedText, "error": "\(error)"])
        }
    }

    private func prepare(_ tenant: TenantAPNs, message id: UUID, tenantId: UUID) async throws -> Prepared {
        var prepared = Prepared(tenant: tenant)
        guard tenant.problem == nil, let bundleId = tenant.bundleId else { return prepared }
        do {
            prepared.message = try await messages.get(id, tenant: tenantId, bundleId: bundleId)
            if prepared.message == nil { prepared.unsendable = "the message does not exist" }
        } catch let error as UnsendableMessage {
            prepared.unsendable = error.description
        }
        return prepared
    }

    /// How a device ends without a push: the tenant cannot send, the message cannot be built, it
    /// expired. nil when it is to be sent (message and credentials present).
    static func endedUnsent(_ device: ChunkDevice, _ prepared: Prepared, now: Date) -> DeliveryOutcome? {
        if let problem = prepared.tenant.problem {
            return DeliveryOutcome(
                device: device, status: .failed, lastReason: problem.message, errorCode: problem.code)
        }
        if let unsendable = prepared.unsendable {
            return DeliveryOutcome(device: device, status: .failed, lastReason: unsendable, errorCode: .messageInvalid)
        }
        if let message = prepared.message, message.isExpired(now: now) {
            return DeliveryOutcome(device: device, status: .expired, errorCode: .messageExpired)
        }
        if prepared.message == nil || prepared.tenant.credentials == nil {
            return DeliveryOutcome(device: device, status: .failed, errorCode: .apnsCredentialsMissing)
        }
        return nil
    }

    // MARK: - Send

    /// One batch per environment (a chunk is almost always one): the first attempts go out
    /// together through the (team, environment) client, retries per delivery (`RetryPolicy`).
    /// Each device (a position in `devices`) is sent its message's request template with its own
    /// token and apns-id. The outcomes are appended to `outcomes`.
    private func send(
        _ positions: [Int], of devices: [ChunkDevice], _ plan: ChunkPlan, credentials: APNsCredentials,
        into outcomes: inout [DeliveryOutcome]
    ) async {
        // Environments in name order, each with its devices in chunk order (a short list: there
        // are two environments).
        var byEnvironment: [(environment: APNsEnvironment, positions: [Int])] = []
        for position in positions {
            let environment = devices[position].apnsEnvironment
            if let index = byEnvironment.firstIndex(where: { $0.environment == environment }) {
                byEnvironment[index].positions.append(position)
            } else {
                byEnvironment.append((environment, [position]))
            }
        }
        byEnvironment.sort { $0.environment.rawValue < $1.environment.rawValue }
        for (environment, batch) in byEnvironment {
            let client: APNsClient
            do {
                client = try clients.client(team: credentials.teamId, environment: environment)
            } catch {
                logger.error("apns client could not be made", metadata: ["error": "\(error)"])
                outcomes += batch.map {
                    DeliveryOutcome(
                        device: devices[$0], status: .failed, lastReason: "\(error)", errorCode: .apnsClientUnavailable)
                }
                continue
            }
            var requests: [APNsRequest] = []
            requests.reserveCapacity(batch.count)
            for position in batch {
                let device = devices[position]
                // Every device of a round has its message (`ChunkPlan.forDevice`).
                var request = plan.forDevice(position)!.message!.template
                request.deviceToken = device.token
                request.apnsId = device.deliveryId
                requests.append(request)
            }
            let results = await client.sendWithRetries(
                batch: requests, credentials: credentials, policy: configuration.retryPolicy)
            for (position, result) in zip(batch, results) {
                outcomes.append(DeliveryOutcome(device: devices[position], result: result))
            }
        }
    }

    // MARK: - Take-over of a stopped replica's chunks

    /// Takes over up to `limit` push chunks claimed longer than `staleSending` ago (their replica
    /// stopped before recording them) and sends them again under the same apns-ids, the lost
    /// attempts recorded first as unknown; and records the stale Live Activity requests as lost
    /// (`Ledger.recordLostLiveActivities`: never sent again). Answers how many deliveries were
    /// sent again.
    @discardableResult
    func takeOverStaleClaims(limit: Int = 50) async throws -> Int {
        let lost = try await ledger.recordLostLiveActivities(staleAfter: configuration.staleSending, instance: instance)
        if lost > 0 {
            logger.warning(
                "recorded Live Activity requests a stopped replica had decided as lost",
                metadata: ["count": String(lost)])
        }
        let taken = try await ledger.takeOverStale(
            staleAfter: configuration.staleSending, limit: limit, instance: instance)
        guard !taken.isEmpty else { return 0 }
        let total = taken.reduce(0) { $0 + $1.devices.count }
        logger.warning(
            "re-sending deliveries a stopped replica had claimed",
            metadata: ["count": String(total), "chunks": String(taken.count)])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for chunk in taken { group.addTask { try await send(chunk, started: ContinuousClock.now) } }
            try await group.waitForAll()
        }
        return total
    }
}
