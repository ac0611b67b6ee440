import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitWebhooks
import BuzzKitWire
import BuzzKitWorkflowRuns
import Foundation

/// One batch of one `ErasureStep`, inside `Eraser.batch`'s transaction (the record locked): the
/// rows it removes or rewrites and the record's counts commit together. Every batch is idempotent
/// (it works on what is still there), so a batch lost to a crash is simply done again.
struct ErasureSteps {
    enum Outcome {
        /// The batch was full: run another.
        case more
        /// Blocked for now (runs still ending, a send still holding the person).
        case waiting
        /// The step is over.
        case done
    }

    let tx: PostgresConnection
    let record: ErasureRecord
    let settings: ErasureSettings

    var tenant: UUID { record.tenantId }
    var batchSize: Int { max(1, settings.batchSize) }

    func run(_ step: ErasureStep) async throws -> Outcome {
        switch step {
        case .events: return try await events()
        case .receipts: return try await receipts()
        case .runs: return try await runs()
        case .ledger: return try await ledger()
        case .webhooks: return try await webhooks()
        }
    }

    /// Up to a batch of the person's events, in whichever partitions they are: found through
    /// `events_subscriber_time`, then deleted partition by partition by row address (a TID scan;
    /// a join on the partitioned table would hash all of it).
    func events() async throws -> Outcome {
        let found = try await tx.query(
            """
            SELECT tableoid::regclass::text, array_agg(ctid)::text[] FROM (
                SELECT tableoid, ctid FROM events
                WHERE tenant_id = $1::uuid AND subscriber_id = ANY ($2::text[]) LIMIT $3) doomed
            GROUP BY tableoid
            """, [tenant, record.subjectIds, batchSize])
        var deleted = 0
        for row in found {
            // The partition's name as the catalog quotes it (regclass output), never user text.
            let partition = try row.decode(String.self, at: 0)
            deleted += try await tx.execute(
                """
                DELETE FROM \(partition)
                WHERE ctid = ANY ($1::text[]::tid[]) AND tenant_id = $2::uuid AND subscriber_id = ANY ($3::text[])
                """, [try row.decode([String].self, at: 1), tenant, record.subjectIds])
        }
        try await add(["events": deleted])
        return found.isEmpty ? .done : .more
    }

    /// Up to a batch of the person's receipts (`message_receipts_subscriber`).
    func receipts() async throws -> Outcome {
        let deleted = try await tx.execute(
            """
            DELETE FROM message_receipts r
            USING (SELECT message_id, kind, subscriber_id FROM message_receipts
                   WHERE tenant_id = $1::uuid AND subscriber_id = ANY ($2::text[]) LIMIT $3) doomed
            WHERE r.tenant_id = $1::uuid AND r.message_id = doomed.message_id AND r.kind = doomed.kind
              AND r.subscriber_id = doomed.subscriber_id
            """, [tenant, record.subjectIds, batchSize])
        try await add(["receipts": deleted])
        return deleted < batchSize ? .done : .more
    }

    /// Cancels the person's live runs once (as deleting a workflow does), waits until the workflow
    /// service ended them or `runCancelWait` passed, then deletes a batch of runs.
    func runs() async throws -> Outcome {
        guard let asked = record.cancelRequestedAt else {
            try await WorkflowRunStore.requestCancelForErasure(
                on: tx, tenantId: tenant, subscriberIds: record.subjectIds)
            try await tx.execute("UPDATE erasures SET cancel_requested_at = now() WHERE id = $1::uuid", [record.id])
            return .more
        }
        let live = try await WorkflowRunStore.liveRuns(on: tx, tenantId: tenant, subscriberIds: record.subjectIds)
        if live > 0, Date().timeIntervalSince(asked) < settings.runCancelWait.sqlSeconds { return .waiting }
        let erased = try await WorkflowRunStore.eraseRuns(
            on: tx, tenantId: tenant, subscriberIds: record.subjectIds, limit: batchSize)
        try await add([
            "workflowRuns": erased.runs, "digestEvents": erased.digestEvents, "digestWindows": erased.digestWindows,
            "throttles": erased.throttles, "triggerSkips": erased.triggerSkips
        ])
        return erased.runs < batchSize ? .done : .more
    }

    /// A page of the ledger walk (`Ledger.erasePage`), after the sends that hold the person end.
    func ledger() async throws -> Outcome {
        if try await Ledger.erasureBlocked(
            on: tx, tenantId: tenant, subjectIds: record.subjectIds, tokens: record.tokens)
        {
            return .waiting
        }
        let page = try await Ledger.erasePage(
            on: tx, tenantId: tenant, subjectIds: record.subjectIds, tokens: record.tokens,
            upTo: record.requestedAt, after: record.cursor, limit: max(1, batchSize / 10))
        try await add(["deliveries": page.deliveries, "payloads": page.payloads, "messages": page.messages])
        guard let next = page.next else { return .done }
        try await tx.execute(
            "UPDATE erasures SET cursor_at = $2::timestamptz, cursor_id = $3::uuid WHERE id = $1::uuid",
            [record.id, next.createdAt, next.id])
        return .more
    }

    /// The tenant's webhook events and messages that name the person, rewritten in one pass.
    func webhooks() async throws -> Outcome {
        let erased = try await WebhookOutbox.eraseStrings(
            on: tx, tenantId: tenant, needles: record.subjectIds + record.tokens)
        try await add(["webhookEvents": erased.outbox, "webhookMessages": erased.messages])
        return .done
    }

    /// Adds `counts` to the record's.
    private func add(_ counts: [String: Int]) async throws {
        let delta = JSONValue.object(counts.mapValues { JSONValue.int(Int64($0)) })
        try await tx.execute(
            """
            UPDATE erasures SET counts = (
                SELECT jsonb_object_agg(k, coalesce((counts->>k)::bigint, 0) + coalesce(($2::jsonb->>k)::bigint, 0))
                FROM jsonb_object_keys(counts || $2::jsonb) AS k)
            WHERE id = $1::uuid
            """, [record.id, delta])
    }
}
