import BuzzKitCore
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitWire
import Foundation

/// Writes a Live Activity send's outcomes: every attempt into `delivery_attempts` (payload bytes,
/// headers as sent with the JWT redacted, status, reason, `apns-id`, latency), each delivery's
/// final status, and the tokens APNs refused marked invalid in the registry
/// (unless registered again after APNs's timestamp). One statement, or one transaction when a
/// token is invalidated; retried on a blip, since the send already happened.
struct LiveActivityLedger: Sendable {
    let postgres: PostgresClient
    let logger: Logger

    func record(_ outcomes: [LiveActivityOutcome], tenant: UUID) async throws {
        var aId: [UUID] = [], aNumber: [Int] = [], aPayload: [String] = [], aHeaders: [String] = []
        var aStatus: [Int] = [], aReason: [String?] = [], aApnsId: [String?] = [], aLatency: [Int] = [],
            aError: [String?] = []
        var uId: [UUID] = [], uStatus: [String] = [], uAttempts: [Int] = [], uLast: [Int?] = [], uReason: [String?] = []
        var uCode: [String?] = []
        for outcome in outcomes {
            for (index, attempt) in outcome.attempts.enumerated() {
                aId.append(outcome.target.deliveryId)
                aNumber.append(index + 1)
                aPayload.append(String(decoding: attempt.payload, as: UTF8.self))
                aHeaders.append(String(decoding: attempt.requestHeadersJSON.jsonBytes, as: UTF8.self))
                aStatus.append(attempt.status)
                aReason.append(attempt.reason?.rawValue)
                aApnsId.append(attempt.apnsId)
                aLatency.append(attempt.latencyMilliseconds)
                aError.append(attempt.transportError?.description)
            }
            uId.append(outcome.target.deliveryId)
            uStatus.append(outcome.status)
            uAttempts.append(outcome.attempts.count)
            uLast.append(outcome.attempts.last?.status)
            uReason.append(outcome.reason)
            uCode.append(outcome.errorCode)
        }
        let ledger = """
            WITH attempts AS (
                INSERT INTO delivery_attempt_rows (delivery_id, attempt, payload, headers, status, reason, apns_id, latency_ms, error)
                SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::json[], $5::int[], $6::text[], $7::text[],
                                     $8::int[], $9::text[])
                ON CONFLICT DO NOTHING
            )
            UPDATE deliveries d SET status = u.status, attempt_count = u.attempts, last_status = u.last_status,
                last_reason = u.last_reason, error_code = u.error_code,
                sent_at = CASE WHEN u.status = 'sent' THEN now() ELSE d.sent_at END, updated_at = now()
            FROM unnest($10::uuid[], $11::text[], $12::int[], $13::int[], $14::text[], $15::text[])
                AS u(id, status, attempts, last_status, last_reason, error_code)
            WHERE d.id = u.id
            """
        let parameters: [any PostgresEncodable] = [
            aId, aNumber, aPayload, aHeaders, aStatus, aReason, aApnsId, aLatency, aError,
            uId, uStatus, uAttempts, uLast, uReason, uCode
        ]
        let invalid = outcomes.filter { $0.invalidAt != nil }
        try await retryingLedgerWrite(logger: logger) {
            guard !invalid.isEmpty else {
                try await postgres.execute(ledger, parameters)
                return
            }
            try await postgres.withTransaction { tx in
                try await tx.execute(ledger, parameters)
                let tokens = invalid.map(\.target.token), at = invalid.map { $0.invalidAt ?? Date() }
                let reasons = invalid.map { $0.reason ?? "Unregistered" }
                for table in ["live_activities", "live_activity_start_tokens"] {
                    try await tx.execute(
                        """
                        UPDATE \(table) t SET token_status = 'invalid', token_invalidated_at = u.at, token_invalid_reason = u.reason
                        FROM unnest($2::text[], $3::timestamptz[], $4::text[]) AS u(token, at, reason)
                        WHERE t.tenant_id = $1::uuid AND t.token = u.token AND t.updated_at <= u.at
                        """, [tenant, tokens, at, reasons])
                }
            }
        }
    }
}
