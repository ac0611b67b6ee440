import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// Where an erasure is: `erasures.step`. Steps run in this order, each in batches that commit with
/// their counts, so a crash part-way resumes at the batch that did not commit.
enum ErasureStep: String, Sendable, CaseIterable {
    /// Events in every partition, by the person's ids (the subscriber id and its anonymous ids).
    case events
    /// Per-subscriber receipts (`message_receipts`); the messages' receipt counts stay.
    case receipts
    /// Workflow runs: cancelled first (the workflow service ends them), then deleted with their
    /// inbox, digest events and windows, throttles and trigger skips.
    case runs
    /// The ledger, anonymised through `Ledger.erasePage` (waits while a send still holds the person).
    case ledger
    /// Webhook events not yet sent and messages kept: the person's ids and tokens made "(erased)"
    /// where an event names a person (`WebhookOutbox.eraseStrings`).
    case webhooks
}

/// One row of `erasures`, as the erasure steps and the API read it.
struct ErasureRecord: Sendable {
    static let columns = """
        id, tenant_id, subject_hash, api_key_id, status, subject_ids, tokens, step, cursor_at, cursor_id, counts,
        cancel_requested_at, requested_at, completed_at, \(isoColumn("requested_at", as: "requested_iso")),
        \(isoColumn("completed_at", as: "completed_iso"))
        """

    var id: UUID
    var tenantId: UUID
    var subjectHash: String
    var apiKeyId: UUID?
    var completed: Bool
    var subjectIds: [String]
    var tokens: [String]
    var step: ErasureStep?
    var cursor: (createdAt: Date, id: UUID)?
    var counts: [String: JSONValue]
    var cancelRequestedAt: Date?
    var requestedAt: Date
    var completedAt: Date?
    /// The two times as the API writes them (Postgres's ISO 8601 text, as every route answers).
    var requestedText: String
    var completedText: String?

    init(_ row: PostgresRow) throws {
        id = try row.decode(UUID.self, named: "id")
        tenantId = try row.decode(UUID.self, named: "tenant_id")
        subjectHash = try row.decode(String.self, named: "subject_hash")
        apiKeyId = try row.decode(UUID?.self, named: "api_key_id")
        completed = try row.decode(String.self, named: "status") == "completed"
        subjectIds = try row.decode([String]?.self, named: "subject_ids") ?? []
        tokens = try row.decode([String]?.self, named: "tokens") ?? []
        step = ErasureStep(rawValue: try row.decode(String.self, named: "step"))
        if let at = try row.decode(Date?.self, named: "cursor_at"),
            let id = try row.decode(UUID?.self, named: "cursor_id")
        {
            cursor = (at, id)
        }
        counts = try row.decode(JSONValue.self, named: "counts").objectValue ?? [:]
        cancelRequestedAt = try row.decode(Date?.self, named: "cancel_requested_at")
        requestedAt = try row.decode(Date.self, named: "requested_at")
        completedAt = try row.decode(Date?.self, named: "completed_at")
        requestedText = try row.decode(String.self, named: "requested_iso")
        completedText = try row.decode(String?.self, named: "completed_iso")
    }

    /// What was removed (rows deleted), by the API's names of the kinds.
    static let removedKinds = [
        "devices", "aliases", "installations", "topicSubscriptions", "liveActivities", "pushToStartTokens",
        "events", "receipts", "workflowRuns", "digestEvents", "digestWindows", "throttles", "triggerSkips"
    ]
    /// What was anonymised (rows kept without what names the person).
    static let anonymisedKinds = ["deliveries", "payloads", "messages", "webhookEvents", "webhookMessages"]

    func count(_ kind: String) -> Int { Int(counts[kind]?.intValue ?? 0) }

    /// The API's representation (`Erasure` in the document).
    var json: JSONValue {
        func group(_ kinds: [String]) -> JSONValue {
            .object(Dictionary(uniqueKeysWithValues: kinds.map { ($0, JSONValue.int(Int64(count($0)))) }))
        }
        return [
            "id": .string(id.uuidString.lowercased()),
            "status": .string(completed ? "completed" : "running"),
            "step": completed ? .null : .string(step?.rawValue ?? ""),
            "subjectHash": .string(subjectHash),
            "apiKeyId": apiKeyId.map { .string($0.uuidString.lowercased()) } ?? .null,
            "requestedAt": .string(requestedText),
            "completedAt": completedText.map { .string($0) } ?? .null,
            "removed": group(Self.removedKinds),
            "anonymised": group(Self.anonymisedKinds)
        ]
    }
}
