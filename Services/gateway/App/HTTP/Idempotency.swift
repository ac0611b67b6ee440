import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// `Idempotency-Key` on POST: the first response to a key is stored for 24 hours (per tenant, or
/// per workspace on admin routes) with a hash of method, path and body.
///
/// - same key, same request, first one finished: its response again, `metadata.replayed: true`;
/// - same key, another request: `409 idempotency_key_reused`;
/// - same key while the first is still running: `409 conflict` (retry later);
/// - a first attempt that failed with a 5xx (or threw) is forgotten, so a retry runs again.
///
/// Stored responses are sealed with the gateway's secret key (AES-256-GCM, bound to the record's
/// scope and key): some hold a secret shown once (`POST /v1/api-keys`, `POST /v1/installations`),
/// and a replay must show it again without the database holding it in clear. Records written
/// before sealing are read as they are.
///
/// The records are partitioned by day of `created_at` and leave a day at a time
/// (`IdempotencyRetention`, migration 0028), so "one record per key" is no unique index: a claim
/// locks the key (a transaction advisory lock on its hash), then looks for a record of the last
/// 24 hours, then inserts one. Two claims of one key are ordered by the lock; the second sees the
/// first's record. An expired record is left to its day's drop.
struct Idempotency: Sendable {
    let postgres: PostgresClient
    let sealer: AESGCM
    let logger: Logger

    static let header = "Idempotency-Key"
    static let maxKeyLength = 255

    enum Claim: Sendable {
        case claimed
        case replay(Response)
    }

    static func requestHash(_ request: Request) -> [UInt8] {
        var material = Array(request.method.utf8)
        material.append(0)
        material += Array(request.path.utf8)
        material.append(0)
        material += request.body
        return Digest.sha256(material)
    }

    /// 1 to 255 visible ASCII characters.
    static let rule = TextRule.characters(
        ASCIIClass([0x21...0x7E]), 1, maxKeyLength,
        problem: "must be 1 to 255 visible ASCII characters")

    static func validate(_ key: String) throws(APIError) {
        guard rule.accepts(key) else {
            throw APIError(
                .validationFailed, "the Idempotency-Key header is invalid",
                details: [
                    [
                        "path": "header.Idempotency-Key",
                        "message": "must be 1 to 255 visible ASCII characters"
                    ]
                ])
        }
    }

    /// The record of a key still in force: written within the last 24 hours (the day partitions it
    /// can be in) and not expired. `$1` scope, `$2` key.
    static let current = """
        scope = $1::uuid AND idempotency_key = $2
          AND created_at > now() - interval '24 hours' AND expires_at > now()
        """

    /// Claims `key` for this request, or answers with what the first request got.
    func claim(scope: UUID, key: String, request: Request) async throws -> Claim {
        let hash = Data(Self.requestHash(request))
        let existing = try await postgres.withTransaction { tx -> (Data, Int?, Data?)? in
            // The lock first, in its own statement: the look that follows then sees a claim that
            // committed while this one waited.
            try await tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1::text || ':' || $2, 0))", [scope, key])
            let rows = try await tx.query(
                "SELECT request_hash, status, response_body FROM idempotency_records WHERE \(Self.current)",
                [scope, key])
            if let row = rows.first {
                let stored: (Data, Int?, Data?) = try row.decode((Data, Int?, Data?).self)
                return stored
            }
            try await tx.execute(
                "INSERT INTO idempotency_records (scope, idempotency_key, request_hash) VALUES ($1::uuid, $2, $3)",
                [scope, key, hash])
            return nil
        }
        guard let (storedHash, status, body) = existing else { return .claimed }
        guard storedHash == hash else {
            throw APIError(
                .idempotencyKeyReused,
                "this Idempotency-Key was used for another request in the last 24 hours")
        }
        guard let status, let body else {
            throw APIError(.conflict, "a request with this Idempotency-Key is still in progress; retry later")
        }
        var envelope = try Envelope.decode(Self.unseal(Array(body), sealer: sealer, scope: scope, key: key))
        envelope.metadata["replayed"] = true
        return .replay(Response(status: status, envelope: envelope))
    }

    /// Stores the first response (or forgets the claim when it failed on our side).
    func complete(scope: UUID, key: String, response: Response?) async {
        do {
            if let response, response.status < 500, case .envelope(let envelope) = response.content {
                var stored = envelope
                stored.metadata["requestId"] = nil
                try await postgres.execute(
                    """
                    UPDATE idempotency_records SET status = $3, response_body = $4 WHERE \(Self.current)
                    """,
                    [
                        scope, key, response.status,
                        Data(try sealer.seal(stored.encoded(requestId: ""), associatedData: Self.binding(scope, key)))
                    ])
            } else {
                try await postgres.execute(
                    "DELETE FROM idempotency_records WHERE \(Self.current)", [scope, key])
            }
        } catch {
            // The claim stays (a retry gets 409 conflict) until it expires in 24 hours.
            logger.warning("idempotency.complete_failed", metadata: ["error": "\(error)"])
        }
    }

    /// The associated data a stored response is sealed with: it opens only for its own record.
    static func binding(_ scope: UUID, _ key: String) -> [UInt8] {
        Array(scope.uuidString.utf8) + [0] + Array(key.utf8)
    }

    /// The stored response's envelope bytes (a record from before sealing is plain JSON).
    static func unseal(_ stored: [UInt8], sealer: AESGCM, scope: UUID, key: String) -> [UInt8] {
        if let opened = try? sealer.open(stored, associatedData: binding(scope, key)) { return opened }
        return stored
    }
}
