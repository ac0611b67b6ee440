import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitLedger
import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Testing

/// Every vocabulary the ledger's tables store is an enum, and each enum is its column's SQL
/// `CHECK` list as the migrated database holds it (read from `pg_constraint`, so a later
/// migration that changes a list must change the enum too, and the other way round). And every
/// `CHECK` on those tables is accounted for: a column's list here, or one of the few rules that
/// are not vocabularies (a token's hex pattern, a chunk's arrays in step), so a new one cannot be
/// added without its enum.
@Suite("Statuses: the enums are the CHECK lists", .requiresTestStack)
struct StatusCheckTests {
    /// (table, column, the enum's raw values).
    static let vocabularies: [(String, String, Set<String>)] = [
        ("messages", "status", Set(MessageStatus.allCases.map(\.rawValue))),
        ("messages", "kind", Set(MessageKind.allCases.map(\.rawValue))),
        ("messages", "environment", Set(APNsEnvironment.allCases.map(\.rawValue))),
        ("deliveries", "status", Set(DeliveryStatus.allCases.map(\.rawValue))),
        ("deliveries", "suppressed_reason", Set(SuppressionReason.allCases.map(\.rawValue))),
        ("messages", "suppressed_reason", Set(SuppressionReason.allCases.map(\.rawValue))),
        ("delivery_chunks", "kind", Set(ChunkKind.allCases.map(\.rawValue))),
        ("live_activities", "environment", Set(APNsEnvironment.allCases.map(\.rawValue))),
        ("live_activities", "state", Set(LiveActivityVocabulary.State.allCases.map(\.rawValue))),
        ("live_activities", "ended_by", Set(LiveActivityVocabulary.EndedBy.allCases.map(\.rawValue))),
        ("live_activities", "token_status", Set(LiveActivityVocabulary.TokenStatus.allCases.map(\.rawValue))),
        ("live_activity_start_tokens", "environment", Set(APNsEnvironment.allCases.map(\.rawValue))),
        (
            "live_activity_start_tokens", "token_status",
            Set(LiveActivityVocabulary.TokenStatus.allCases.map(\.rawValue))
        )
    ]

    /// The `CHECK`s of the ledger's tables that are not a vocabulary: (table, its columns).
    static let rules: Set<String> = [
        "live_activities(token)", "live_activity_start_tokens(token)",
        "delivery_chunks(environments,message_ids,subscriber_ids,tokens)",
        // Migration 0023: a suppressed delivery has its reason and nothing else has one; a message
        // has a reason only when its sender decided its policy.
        "deliveries(status,suppressed_reason)", "messages(policy_decided_at,suppressed_reason)"
    ]

    static let tables = [
        "messages", "deliveries", "delivery_chunks", "delivery_payloads", "delivery_attempt_rows",
        "live_activities", "live_activity_start_tokens"
    ]

    @Test func everyVocabularyOfTheLedgerIsItsColumnsCheckList() async throws {
        let schema = TestEnvironment.uniqueName("statuses")
        let postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 1)
        let outcome: Result<(lists: [String: Set<String>], checks: Set<String>), any Error>
        do {
            // Parallel tests race on the baseline's database-wide `CREATE EXTENSION IF NOT EXISTS
            // pgcrypto`; a file that fails leaves nothing behind, so trying again is safe.
            for attempt in 1...5 {
                do {
                    _ = try await Migrator(client: postgres, logger: .silent()).migrate()
                    break
                } catch  where attempt < 5 {
                    try await Task.sleep(for: .milliseconds(100 * attempt))
                }
            }
            var lists: [String: Set<String>] = [:]
            for (table, column, _) in Self.vocabularies {
                lists["\(table).\(column)"] = try await Self.checkList(
                    postgres, schema: schema, table: table, column: column)
            }
            outcome = .success((lists, try await Self.checks(postgres, schema: schema)))
        } catch {
            outcome = .failure(error)
        }
        await postgres.shutdown()
        let admin = try PostgresClient(url: TestEnvironment.postgresURL, logger: .silent())
        _ = try? await admin.execute("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
        await admin.shutdown()
        let found = try outcome.get()
        for (table, column, values) in Self.vocabularies {
            #expect(found.lists["\(table).\(column)"] == values, "\(table).\(column)")
        }
        let accounted = Set(Self.vocabularies.map { "\($0.0)(\($0.1))" }).union(Self.rules)
        #expect(found.checks == accounted, "a CHECK on the ledger's tables without its enum here")
    }

    // MARK: - Workflow runs (issue 24 item 3)

    /// The vocabularies of the workflow run tables, each the CHECK list of its column.
    static let workflowVocabularies: [(table: String, column: String, values: Set<String>)] = [
        ("workflow_runs", "status", Set(WorkflowRunStatus.allCases.map(\.rawValue))),
        ("workflow_run_inputs", "kind", Set(WorkflowRunInputKind.allCases.map(\.rawValue)))
    ]

    @Test func workflowRunVocabulariesEqualTheirCheckConstraints() async throws {
        let schema = try await MigratedSchema.start("wfstatuses", poolSize: 1)
        let outcome: Result<(lists: [Set<String>], listColumns: Set<String>), any Error>
        do {
            var lists: [Set<String>] = []
            for v in Self.workflowVocabularies {
                lists.append(
                    try await Self.checkList(schema.postgres, schema: schema.name, table: v.table, column: v.column))
            }
            outcome = .success(
                (
                    lists,
                    try await Self.listCheckColumns(
                        schema.postgres, schema: schema.name, tables: Set(Self.workflowVocabularies.map(\.table)))
                ))
        } catch {
            outcome = .failure(error)
        }
        await schema.stop()
        let found = try outcome.get()
        for (v, list) in zip(Self.workflowVocabularies, found.lists) {
            #expect(list == v.values, "\(v.table).\(v.column)")
        }
        // Every column of these tables with an IN-list CHECK has its enum above.
        #expect(found.listColumns == Set(Self.workflowVocabularies.map { "\($0.table).\($0.column)" }))
    }

    /// `table.column` of every single-column CHECK of `tables` that is a list of values (`= ANY (ARRAY[...])`).
    static func listCheckColumns(_ postgres: PostgresClient, schema: String, tables: Set<String>) async throws
        -> Set<String>
    {
        let rows = try await postgres.query(
            """
            SELECT t.relname || '.' || a.attname
            FROM pg_constraint c
            JOIN pg_class t ON t.oid = c.conrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            JOIN pg_attribute a ON a.attrelid = t.oid AND c.conkey = ARRAY[a.attnum]
            WHERE n.nspname = $1 AND t.relname = ANY ($2::text[]) AND c.contype = 'c'
              AND pg_get_constraintdef(c.oid) LIKE '%ANY (ARRAY[%'
            """, [schema, tables.sorted()])
        return Set(try rows.map { try $0.decode(String.self, at: 0) })
    }

    /// The values of the one `CHECK (column IN (...))` constraint on `table.column`: Postgres keeps
    /// it as `CHECK ((column = ANY (ARRAY['a'::text, 'b'::text])))`.
    static func checkList(_ postgres: PostgresClient, schema: String, table: String, column: String) async throws
        -> Set<String>
    {
        let rows = try await postgres.query(
            """
            SELECT pg_get_constraintdef(c.oid)
            FROM pg_constraint c
            JOIN pg_class t ON t.oid = c.conrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            JOIN pg_attribute a ON a.attrelid = t.oid AND a.attname = $3
            WHERE n.nspname = $1 AND t.relname = $2 AND c.contype = 'c' AND c.conkey = ARRAY[a.attnum]
            """, [schema, table, column])
        #expect(rows.count == 1, "\(table).\(column) should have exactly one CHECK constraint of its own")
        let definition = try #require(rows.first).decode(String.self, at: 0)
        var values: Set<String> = []
        var rest = Substring(definition)
        while let open = rest.firstIndex(of: "'") {
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "'") else { break }
            values.insert(String(rest[afterOpen..<close]))
            rest = rest[rest.index(after: close)...]
        }
        #expect(!values.isEmpty, "no values in \(definition)")
        return values
    }

    /// Every `CHECK` constraint on the ledger's tables, as `table(column,...)`.
    static func checks(_ postgres: PostgresClient, schema: String) async throws -> Set<String> {
        let rows = try await postgres.query(
            """
            SELECT t.relname || '(' || string_agg(a.attname, ',' ORDER BY a.attname) || ')'
            FROM pg_constraint c
            JOIN pg_class t ON t.oid = c.conrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(c.conkey)
            WHERE n.nspname = $1 AND t.relname = ANY($2::text[]) AND c.contype = 'c'
            GROUP BY c.oid, t.relname
            """, [schema, tables])
        return Set(try rows.map { try $0.decode(String.self, at: 0) })
    }
}
