import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitPush
import BuzzKitRedis
import Foundation

/// Handles one batch of `bk:la` entries (what one lane read at once), in five steps whatever
/// the batch's size: the tenants' credentials (cached), the decision
/// (`Ledger.decideLiveActivities`, one statement per round of `LiveActivityRounds`), the pushes
/// (`LiveActivitySender`, one HTTP/2 batch per APNs client), the ledger (`Ledger.record`, one
/// statement) and the answers (an `LPUSH` and an `EXPIRE` per reply list, handed to the consumer,
/// which sends them in one round trip with the batch's `XACK`, ahead of it).
///
/// An entry whose handling failed is returned with its error and stays pending (retried, then
/// dead-lettered, by the consumer; replicas share the stream, so the retry may run on another
/// one); the others are acked, in the round trip of their answers. What a failure, or a kill,
/// leaves:
/// - before deciding (credentials, a round's statement): nothing; the entry is decided afresh
///   when retried (rounds after a failed one are not decided either, so order holds);
/// - after deciding: its message (`fanned_out`) and ONE chunk of kind `live_activity` holding its
///   tokens, claimed by this replica; no delivery row yet. Its pushes go out with the batch all the
///   same. A retry finds its message and is answered from the ledger, never sent again (`sending`
///   while the chunk is pending);
/// - after recording: each token's delivery written ONCE, with its outcome and attempts in the
///   format pushes use, the chunk gone and the message `completed`; a round trip of answers and
///   acknowledgement that failed leaves the entry pending, to a retry that answers what the
///   ledger shows (an error reply to an `LPUSH` alone, which only a reply list of the wrong type
///   or a full Redis gives, is logged and the request ends in the gateway's 504).
/// A kill between deciding and recording can lose those pushes, never double them: the chunk
/// stays claimed, and once it is older than apns-sender's `BUZZKIT_SENDER_STALE_SENDING` its
/// sweeper records its deliveries `failed` / `sender_lost` (whether APNs had them is unknown)
/// and completes the message (`Ledger.recordLostLiveActivities`). A replica merely slower than
/// that keeps the sweeper's record: its own write finds the deliveries there.
struct LiveActivityBatch: Sendable {
    let ledger: Ledger
    let sender: LiveActivitySender
    let credentials: TenantCredentialStore
    let instance: String
    let metrics: LiveActivityMetrics
    let logger: Logger

    func handle(_ stream: [StreamEntry]) async -> StreamConsumer.BatchOutcome {
        let started = ContinuousClock.now
        let nowMs = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        var failures: [StreamEntryID: any Error] = [:]
        var ids: [StreamEntryID] = []
        var entries: [LiveActivityEntry] = []
        for item in stream {
            metrics.queue.observe(Double(nowMs &- min(nowMs, item.id.milliseconds)) / 1000)
            do {
                entries.append(try LiveActivityEntry(entry: item))
                ids.append(item.id)
            } catch {
                failures[item.id] = error
            }
        }
        metrics.batchSize.observe(Double(entries.count))
        guard !entries.isEmpty else { return StreamConsumer.BatchOutcome(failures: failures, commands: []) }

        // 1. The tenants' APNs settings, before anything is decided.
        var tenants: [UUID: TenantAPNs] = [:]
        for tenant in Set(entries.map(\.tenantId)) {
            do {
                tenants[tenant] = try await credentials.get(tenant)
            } catch {
                for (id, entry) in zip(ids, entries) where entry.tenantId == tenant { failures[id] = error }
            }
        }

        // 2. Decide, round by round; a failed round leaves it and every later one undecided.
        var plans: [LiveActivityPlan?] = Array(repeating: nil, count: entries.count)
        let decidable = entries.indices.filter { failures[ids[$0]] == nil }
        var decideError: (any Error)?
        for round in LiveActivityRounds.split(decidable.map { entries[$0] }).map({ $0.map { decidable[$0] } }) {
            guard decideError == nil else { break }
            let clock = ContinuousClock.now
            do {
                let decided = try await ledger.decideLiveActivities(round.map { entries[$0] }, instance: instance)
                for (index, plan) in zip(round, decided) { plans[index] = plan }
            } catch {
                decideError = error
                logger.warning("live activity requests could not be decided", metadata: ["error": "\(error)"])
            }
            metrics.decide.observe(ContinuousClock.now - clock)
        }
        for index in decidable where plans[index] == nil { failures[ids[index]] = decideError }

        // 3. Send what was decided.
        var jobs: [LiveActivitySender.Job] = []
        var chunks: [ClaimedChunk] = []
        var jobOf: [Int: Int] = [:]
        for (index, plan) in plans.enumerated() {
            guard case .send(let chunk, let targets, _) = plan, let tenant = tenants[entries[index].tenantId]
            else { continue }
            jobOf[index] = jobs.count
            jobs.append(LiveActivitySender.Job(entry: entries[index], targets: targets, tenant: tenant))
            chunks.append(chunk)
        }
        var clock = ContinuousClock.now
        let outcomes = await sender.send(jobs)
        metrics.send.observe(ContinuousClock.now - clock)

        // 4. Record every delivery once, with its attempts; then the answers of requests decided before.
        clock = ContinuousClock.now
        do {
            try await ledger.record(
                zip(chunks, outcomes).map { ChunkRecord(chunk: $0, outcomes: $1) }, instance: instance,
                registry: .liveActivities)
        } catch {
            for index in jobOf.keys { failures[ids[index]] = error }
        }
        metrics.record.observe(ContinuousClock.now - clock)
        let replayed = plans.indices.filter { if case .replay = plans[$0] { true } else { false } }
        var replays: [Int: LiveActivityReply] = [:]
        do {
            for (index, reply) in zip(
                replayed, try await ledger.replayLiveActivities(replayed.map { entries[$0] }))
            {
                replays[index] = reply
            }
        } catch {
            for index in replayed { failures[ids[index]] = error }
        }

        // 5. Answer.
        var answers: [(LiveActivityEntry, LiveActivityReply)] = []
        for (index, plan) in plans.enumerated() where failures[ids[index]] == nil {
            let entry = entries[index]
            let reply: LiveActivityReply
            switch plan {
            case .none:
                continue
            case .replay:
                guard let replayed = replays[index] else { continue }
                reply = replayed
            case .error(let code, let message):
                reply = .error(code: code.rawValue, message: message)
            case .skipped(let skipped):
                reply = .results(messageId: nil, skipped)
            case .send(_, _, let skipped):
                let sent = jobOf[index].map { outcomes[$0].map { $0.result(for: entry.request) } } ?? []
                reply = .results(messageId: entry.messageId, skipped + sent)
            }
            answers.append((entry, reply))
        }
        metrics.requests.increment(by: answers.count)
        metrics.total.observe(ContinuousClock.now - started)
        return StreamConsumer.BatchOutcome(failures: failures, commands: Self.answerCommands(answers))
    }

    /// Every answer, for the round trip of the batch's `XACK` (ahead of it): per reply list one
    /// `LPUSH` of its answers and one `EXPIRE` (the list outlives nobody reading it by at most
    /// `LiveActivityEntry.replyTTL`).
    static func answerCommands(_ answers: [(LiveActivityEntry, LiveActivityReply)]) -> [[RedisArgument]] {
        guard !answers.isEmpty else { return [] }
        var byKey: [String: [RedisArgument]] = [:]
        var order: [String] = []
        for (entry, reply) in answers {
            if byKey[entry.replyKey] == nil { order.append(entry.replyKey) }
            byKey[entry.replyKey, default: []].append(RedisArgument(bytes: entry.replyBytes(reply)))
        }
        let seconds = String(Int(LiveActivityEntry.replyTTL.components.seconds))
        var commands: [[RedisArgument]] = []
        for key in order {
            commands.append([RedisArgument("LPUSH"), RedisArgument(key)] + (byKey[key] ?? []))
            commands.append([RedisArgument("EXPIRE"), RedisArgument(key), RedisArgument(seconds)])
        }
        return commands
    }
}

extension DeliveryOutcome {
    /// The answer's result for this token.
    func result(for request: LiveActivitySendRequest) -> LiveActivityResult {
        LiveActivityResult(
            activityId: request.event == .start ? nil : request.activityId,
            attributesType: request.event == .start ? request.attributesType : nil,
            token: device.token, deliveryId: UUID(uuidString: device.deliveryId),
            status: LiveActivityResult.Status(status), apnsStatus: attempts.last?.status, reason: lastReason,
            apnsId: attempts.last?.apnsId ?? device.deliveryId)
    }
}
