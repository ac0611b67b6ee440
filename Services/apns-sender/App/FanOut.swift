import BuzzKitAudience
import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitRedis
import Foundation

/// Expands one message (a `bk:messages` entry) into chunks of devices, page by page.
///
/// Per page of `pageSize` devices (keyset on (subscriber_id, token)): ONE statement writes the
/// page's chunks of `chunkSize` devices
/// (`delivery_chunks`, queued) and records the page's last key and the devices counted so far in
/// the message row (`Ledger.writePage`), so a crash resumes after the last page written and never
/// writes a device twice; then ONE pipelined XADD puts the chunks
/// on `bk:deliveries`. A crash between the two leaves chunks without an entry: the outbox sweeper
/// finds such orphans and adds them (`Ledger.orphans`). The message ends `fanned_out` with its
/// audience size, and `completed` at once if nothing of it is pending any more
/// (`Ledger.finishFanOut`); otherwise the record of its last chunk completes it.
struct FanOut: Sendable {
    let ledger: Ledger
    let redis: RedisClient
    let credentials: TenantCredentialStore
    let deliveries: StreamName
    let pageSize: Int
    let chunkSize: Int
    let logger: Logger
    var metrics: SenderMetrics = .unregistered()

    var postgres: PostgresClient { ledger.postgres }

    func handle(_ entry: MessageEntry) async throws {
        let message = entry.messageId
        let tenant = entry.tenantId
        // Done, failed or unknown: nothing to do.
        guard let start = try await ledger.beginFanOut(message: message, tenant: tenant) else { return }
        guard let target = MessageTarget(json: start.target) else {
            try await ledger.failMessage(message, code: "invalid_target", "the stored target cannot be read")
            return
        }
        let environment = start.environment
        var afterSubscriber = start.afterSubscriber
        var afterToken = start.afterToken
        let apns = try await credentials.get(tenant)
        if let problem = apns.problem {
            try await ledger.failMessage(message, code: problem.code.rawValue, problem.message)
            logger.warning(
                "message failed: tenant cannot send",
                metadata: [
                    "message.id": message.lowercasedText, "tenant": tenant.lowercasedText,
                    "error.code": problem.code.rawValue
                ])
            return
        }
        if case .expression(let text, _) = target {
            try await fanOutExpression(
                text, message: message, tenant: tenant, environment: environment,
                after: afterSubscriber, now: start.createdAt, counted: start.counted)
            return
        }
        var counted = start.counted
        while true {
            let pageStarted = ContinuousClock.now
            defer { metrics.fanoutPage.observe(ContinuousClock.now - pageStarted) }
            let page = try await ledger.writePage(
                Ledger.PageRequest(
                    target: target, tenant: tenant, message: message, environment: environment,
                    afterSubscriber: afterSubscriber, afterToken: afterToken, limit: pageSize, chunkSize: chunkSize,
                    position: nil, expected: (afterSubscriber, afterToken)))
            if page.devices > 0 && !page.written { return }  // another fan-out of it is ahead
            try await enqueue(page.chunks, tenant: tenant)
            counted += page.devices
            if page.devices < pageSize {
                try await finish(message, audience: counted)
                return
            }
            afterSubscriber = page.lastSubscriber
            afterToken = page.lastToken
        }
    }

    /// An expression audience, streamed: the compiled SQL runs ONCE through a server-side cursor
    /// (`AudienceCursor`, one `now` for the whole send: the message's creation time, so `within:`
    /// windows do not move between pages or after a restart); each page of subscriber ids has its
    /// devices inserted and queued like a `to` list, then its last id is recorded, so a crash
    /// resumes after it (the statement runs again from there: `AudienceQuery.all(after:)`).
    private func fanOutExpression(
        _ text: String, message: UUID, tenant: UUID, environment: String?, after: String?,
        now: Date, counted: Int
    ) async throws {
        let expression: AudienceExpression
        do {
            expression = try AudienceExpression.parse(text)
        } catch {
            try await ledger.failMessage(
                message, code: "invalid_target", "the stored expression does not parse: \(error)")
            return
        }
        let query = AudienceQuery.all(expression, tenantId: tenant, after: after, now: now)
        var counted = counted
        var position = after
        do {
            try await AudienceCursor.stream(
                query, configuration: postgres.configuration, logger: logger,
                pageSize: max(1, pageSize / 2)
            ) { subscribers in
                let pageStarted = ContinuousClock.now
                defer { metrics.fanoutPage.observe(ContinuousClock.now - pageStarted) }
                let last = subscribers[subscribers.count - 1]
                let page = try await ledger.writePage(
                    Ledger.PageRequest(
                        target: .subscribers(subscribers), tenant: tenant, message: message, environment: environment,
                        afterSubscriber: nil, afterToken: nil, limit: Int(Int32.max), chunkSize: chunkSize,
                        position: last, expected: (position, nil), read: subscribers.count))
                if !page.written { throw Overtaken() }
                try await enqueue(page.chunks, tenant: tenant)
                counted += page.devices
                position = last
            }
        } catch is Overtaken {
            return  // another fan-out of the message is ahead
        }
        try await finish(message, audience: counted)
    }

    /// Puts the chunks on `bk:deliveries`, with one pipelined XADD.
    private func enqueue(_ chunks: [UUID], tenant: UUID) async throws {
        guard !chunks.isEmpty else { return }
        try await redis.xaddBatch(
            deliveries.rawValue, entries: chunks.map { DeliveryChunk(tenantId: tenant, chunkId: $0).fields })
    }

    private func finish(_ message: UUID, audience: Int) async throws {
        let completed = try await ledger.finishFanOut(message: message, audience: audience)
        logger.info(
            "message fanned out", metadata: ["message.id": message.lowercasedText, "message.completed": "\(completed)"])
    }

    /// Another fan-out of the message moved its position: this one stops (see `Ledger.pageSQL`).
    struct Overtaken: Error {}
}
