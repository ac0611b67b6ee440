import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// A message as the intake stores it (`queued`): `POST /v1/messages`.
public struct NewMessage: Sendable {
    public var id: UUID
    public var tenantId: UUID
    public var target: MessageTarget
    /// The content members as given (re-read by the sender).
    public var content: JSONValue
    /// `sandbox` or `production`: only devices of that environment; nil: all.
    public var environment: String?

    public init(id: UUID, tenantId: UUID, target: MessageTarget, content: JSONValue, environment: String?) {
        self.id = id
        self.tenantId = tenantId
        self.target = target
        self.content = content
        self.environment = environment
    }
}

/// A workflow's message row: what it is (`kind`: a push, or a local window's plan or cancel as a
/// silent push), to whom, its content, and where it came from (the workflow columns).
public struct WorkflowMessageInsert: Sendable {
    public var id: UUID
    public var tenantId: UUID
    public var subscriberId: String
    public var kind: MessageKind
    /// `push`: the rendered content; `local_plan`: `{"local": plan}`; `local_cancel`: `{"cancel": {"runId"}}`.
    public var content: JSONValue
    public var workflowKey: String
    public var version: Int
    public var runId: UUID
    public var step: String
    /// When the workflow service decided the send policy for this push (nil: apns-sender decides
    /// per subscriber, as for local plans and cancels).
    public var policyDecidedAt: Date?
    /// That decision: nil lets it through, else every device's delivery is suppressed with it.
    public var suppressedReason: SuppressionReason?

    public init(
        id: UUID, tenantId: UUID, subscriberId: String, kind: MessageKind = .push, content: JSONValue,
        workflowKey: String, version: Int, runId: UUID, step: String
    ) {
        self.id = id
        self.tenantId = tenantId
        self.subscriberId = subscriberId
        self.kind = kind
        self.content = content
        self.workflowKey = workflowKey
        self.version = version
        self.runId = runId
        self.step = step
    }
}

/// Messages coming in: the rows the intake and the workflow service insert (`queued`; apns-sender
/// takes them from there).
extension Ledger {
    /// Inserts `messages` (`queued`) with ONE statement (one row alone: a plain `VALUES`).
    public func insertMessages(_ messages: [NewMessage]) async throws {
        let (sql, parameters) = Self.insertStatement(messages)
        try await postgres.execute(sql, parameters)
    }

    /// The same, answering through `completion` on the Postgres connection's thread (no task: the
    /// gateway's `POST /v1/messages` batches answer from there).
    public func insertMessages(
        _ messages: [NewMessage], completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        let (sql, parameters) = Self.insertStatement(messages)
        postgres.query(sql, parameters) { completion($0.map { _ in () }) }
    }

    /// `insertMessages`' statement and its parameters.
    static func insertStatement(_ messages: [NewMessage]) -> (String, [any PostgresEncodable]) {
        if messages.count == 1, let message = messages.first {
            return (
                """
                INSERT INTO messages (id, message_time, tenant_id, target, content, environment)
                VALUES ($1::uuid, \(LedgerTime.newMessage("$1::uuid")), $2::uuid, $3::jsonb, $4::jsonb, $5)
                """,
                [message.id, message.tenantId, message.target.jsonValue, message.content, message.environment]
            )
        }
        // The arrays are written straight into bytes (`PostgresArrayText`): ids and JSON documents
        // without a `String` per element, on the gateway's busiest path.
        var ids = PostgresArrayText(capacity: 2 + messages.count * 37)
        var tenants = PostgresArrayText(capacity: 2 + messages.count * 37)
        var targets = PostgresArrayText(capacity: 2 + messages.count * 32)
        var contents = PostgresArrayText(capacity: 2 + messages.count * 128)
        var environments = PostgresArrayText(capacity: 2 + messages.count * 8)
        for message in messages {
            ids.append(message.id)
            tenants.append(message.tenantId)
            targets.append(utf8: message.target.jsonValue.jsonBytes)
            contents.append(utf8: message.content.jsonBytes)
            environments.append(message.environment)
        }
        return (
            """
            INSERT INTO messages (id, message_time, tenant_id, target, content, environment)
            SELECT id, \(LedgerTime.newMessage("id")), tenant, target::jsonb, content::jsonb, environment
            FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[])
                AS t(id, tenant, target, content, environment)
            """, [ids.value, tenants.value, targets.value, contents.value, environments.value]
        )
    }

    /// Workflow messages' rows (`queued`, each of its kind, to its run's subscriber, naming
    /// workflow, version, run and step), in one statement on the caller's transaction (a run's
    /// state and its sends' rows commit together). Answers the ids inserted: an id that exists
    /// already (a step that ran before, redone after a crash) is not written again and must not be
    /// published again.
    public static func insertWorkflowMessages(on tx: PostgresConnection, _ messages: [WorkflowMessageInsert])
        async throws -> Set<UUID>
    {
        guard !messages.isEmpty else { return [] }
        let rows = try await tx.query(
            """
            INSERT INTO messages (id, message_time, tenant_id, target, content, kind, workflow_key, workflow_version,
                                  workflow_run_id, workflow_step, policy_decided_at, suppressed_reason)
            SELECT id, \(LedgerTime.newMessage("id")), tenant, target::jsonb, content::jsonb, kind, key, version, run, step,
                   decided, reason
            FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::uuid[],
                        $9::text[], $10::timestamptz[], $11::text[])
                 AS t(id, tenant, target, content, kind, key, version, run, step, decided, reason)
            -- A time-ordered id (a run's since migration 0027) is refused by the primary key; an
            -- older run's name-based id is filed at the time it is written, so look for it first.
            WHERE \(LedgerTime.uuid7Time("t.id")) IS NOT NULL OR NOT EXISTS (SELECT 1 FROM messages x WHERE x.id = t.id)
            ON CONFLICT (id, message_time) DO NOTHING RETURNING id
            """,
            [
                messages.map(\.id), messages.map(\.tenantId),
                messages.map { MessageTarget.subscribers([$0.subscriberId]).jsonValue.jsonString },
                messages.map(\.content.jsonString), messages.map(\.kind.rawValue), messages.map(\.workflowKey),
                messages.map(\.version), messages.map(\.runId), messages.map(\.step),
                messages.map(\.policyDecidedAt), messages.map { $0.suppressedReason?.rawValue }
            ])
        return Set(try rows.map { try $0.decode(UUID.self, at: 0) })
    }
}
