import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// One endpoint as the API shows it (never its secret; the create and rotate answers add it once).
public struct WebhookEndpointRecord: Sendable, Hashable {
    public var id: UUID
    public var tenantId: UUID
    public var url: String
    public var description: String?
    public var events: [WebhookEventType]
    public var enabled: Bool
    /// `api` or `failing` while disabled.
    public var disabledReason: String?
    public var disabledAt: Date?
    public var failingSince: Date?
    public var lastSuccessAt: Date?
    public var lastFailureAt: Date?
    /// Until when the previous secret still signs beside the current one (after a rotation).
    public var previousSecretExpiresAt: Date?
    public var createdAt: Date
    public var updatedAt: Date

    static let columnNames = [
        "id", "tenant_id", "url", "description", "event_types", "enabled", "disabled_reason", "disabled_at",
        "failing_since", "last_success_at", "last_failure_at", "previous_secret_expires_at", "created_at", "updated_at"
    ]
    static let columns = columns(of: nil)

    /// The columns `decode` reads, in order, each qualified with `alias` when given.
    static func columns(of alias: String?) -> String {
        columnNames.map { name in alias.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }

    static func decode(_ row: PostgresRow) throws -> WebhookEndpointRecord {
        let expires = try row.decode(Date?.self, at: 11)
        return WebhookEndpointRecord(
            id: try row.decode(UUID.self, at: 0), tenantId: try row.decode(UUID.self, at: 1),
            url: try row.decode(String.self, at: 2), description: try row.decode(String?.self, at: 3),
            events: try row.decode([String].self, at: 4).compactMap(WebhookEventType.init(rawValue:)),
            enabled: try row.decode(Bool.self, at: 5), disabledReason: try row.decode(String?.self, at: 6),
            disabledAt: try row.decode(Date?.self, at: 7), failingSince: try row.decode(Date?.self, at: 8),
            lastSuccessAt: try row.decode(Date?.self, at: 9), lastFailureAt: try row.decode(Date?.self, at: 10),
            previousSecretExpiresAt: expires.flatMap { $0 > Date() ? $0 : nil },
            createdAt: try row.decode(Date.self, at: 12), updatedAt: try row.decode(Date.self, at: 13))
    }

    /// `{id, url, description, events, enabled, disabledReason, disabledAt, failingSince,
    /// lastSuccessAt, lastFailureAt, previousSecretExpiresAt, createdAt, updatedAt}`.
    public var jsonValue: JSONValue {
        [
            "id": .string(id.lowercasedText), "url": .string(url),
            "description": description.map(JSONValue.string) ?? .null,
            "events": .array(events.map { .string($0.rawValue) }), "enabled": .bool(enabled),
            "disabledReason": disabledReason.map(JSONValue.string) ?? .null,
            "disabledAt": WebhookTime.json(disabledAt), "failingSince": WebhookTime.json(failingSince),
            "lastSuccessAt": WebhookTime.json(lastSuccessAt), "lastFailureAt": WebhookTime.json(lastFailureAt),
            "previousSecretExpiresAt": WebhookTime.json(previousSecretExpiresAt),
            "createdAt": .string(WebhookTime.text(createdAt)), "updatedAt": .string(WebhookTime.text(updatedAt))
        ]
    }

    /// The keyset position of this endpoint in the list (newest first).
    public var cursor: String {
        "\(Int64((createdAt.timeIntervalSince1970 * 1_000_000).rounded()))_\(id.lowercasedText)"
    }
}

/// One attempt (or the endpoint's disabling) as `GET /v1/webhooks/{id}/attempts` shows it.
public struct WebhookAttemptRecord: Sendable, Hashable {
    public var id: Int64
    public var webhookId: UUID?
    public var eventType: String
    public var attemptedAt: Date
    /// `delivered`, `retrying`, `failed`, `lost`, `disabled`.
    public var outcome: String
    public var httpStatus: Int?
    public var latencyMs: Int?
    public var response: String?
    public var error: String?
    public var nextAttemptAt: Date?
    public var attempt: Int?

    static let columns =
        "id, message_id, event_type, attempted_at, outcome, http_status, latency_ms, response, error, next_attempt_at, attempt"

    static func decode(_ row: PostgresRow) throws -> WebhookAttemptRecord {
        WebhookAttemptRecord(
            id: try row.decode(Int64.self, at: 0), webhookId: try row.decode(UUID?.self, at: 1),
            eventType: try row.decode(String.self, at: 2), attemptedAt: try row.decode(Date.self, at: 3),
            outcome: try row.decode(String.self, at: 4), httpStatus: try row.decode(Int?.self, at: 5),
            latencyMs: try row.decode(Int?.self, at: 6), response: try row.decode(String?.self, at: 7),
            error: try row.decode(String?.self, at: 8), nextAttemptAt: try row.decode(Date?.self, at: 9),
            attempt: try row.decode(Int?.self, at: 10))
    }

    public var jsonValue: JSONValue {
        [
            "id": .string(String(id)), "webhookId": webhookId.map { .string($0.lowercasedText) } ?? .null,
            "eventType": .string(eventType), "attemptedAt": .string(WebhookTime.text(attemptedAt)),
            "outcome": .string(outcome), "httpStatus": httpStatus.map { .int(Int64($0)) } ?? .null,
            "latencyMs": latencyMs.map { .int(Int64($0)) } ?? .null,
            "response": response.map(JSONValue.string) ?? .null, "error": error.map(JSONValue.string) ?? .null,
            "nextAttemptAt": WebhookTime.json(nextAttemptAt), "attempt": attempt.map { .int(Int64($0)) } ?? .null
        ]
    }
}
