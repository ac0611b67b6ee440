import BuzzKitCrypto
import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation

/// Workflow definitions: `PUT /v1/workflows/{key}` validates a definition (every problem with its
/// JSON path) and stores it as a new immutable version when it changed (the canonical JSON's
/// SHA-256 decides; the same definition again changes nothing), `GET` reads the current version
/// or any version, `enable` / `disable` flip the flag (a disabled workflow starts no new runs;
/// running runs go on), `DELETE` marks it deleted and disabled and asks its running runs to cancel
/// (`WorkflowRunStore.requestCancelAll`, in the same transaction). Every change is announced on the
/// Postgres channel `bk_workflow_changes` (payload `{"tenantId","key","change","version"}`,
/// `change` one of `saved`, `enabled`, `disabled`, `deleted`), in the same transaction: the
/// workflow service cancels a deleted workflow's running runs on `deleted` (and, since NOTIFY is
/// not durable, sweeps runs whose workflow has `deleted_at` set when it starts).
enum WorkflowRoutes {
    static let changesChannel = "bk_workflow_changes"

    static var routes: [GatewayRoute] {
        let write = GatewayRoute.Access.tenant(.workflowsWrite, clientKeys: false)
        let read = GatewayRoute.Access.tenant(.workflowsRead, clientKeys: false)
        return [
            GatewayRoute(
                "GET", "/v1/workflows", id: "listWorkflows", "List workflows in key order (current version, flag)",
                access: read, response: WorkflowSchemas.summary, paginated: true,
                handler: { g, c in try await g.listWorkflows(c) }),
            GatewayRoute(
                "PUT", "/v1/workflows/{key}", id: "saveWorkflow",
                "Create or change a workflow (201 when created): a changed definition makes a new version, the same one again changes nothing; every problem answers 422 with its JSON path",
                access: write, path: keyPath, body: Schema.ref("WorkflowDefinition"),
                response: WorkflowSchemas.workflow,
                errors: [.validationFailed], handler: { g, c in try await g.saveWorkflow(c) }),
            GatewayRoute(
                "GET", "/v1/workflows/{key}", id: "getWorkflow",
                "Read a workflow: its flag, current version and definition",
                access: read, path: keyPath, response: WorkflowSchemas.workflow, errors: [.notFound],
                handler: { g, c in try await g.getWorkflow(c) }),
            GatewayRoute(
                "DELETE", "/v1/workflows/{key}", id: "deleteWorkflow",
                "Delete a workflow (idempotent): it is disabled and gone for the API, its running runs are cancelled; versions stay for the runs that used them",
                access: write, path: keyPath,
                response: Schema.object(
                    [
                        "key": Schema.string(), "deleted": Schema.boolean,
                        "runsCancelled": [
                            "type": "integer", "minimum": 0,
                            "description": "Running runs asked to cancel"
                        ]
                    ],
                    required: ["key", "deleted", "runsCancelled"]),
                handler: { g, c in try await g.deleteWorkflow(c) }),
            GatewayRoute(
                "GET", "/v1/workflows/{key}/versions/{n}", id: "getWorkflowVersion", "Read one version of a workflow",
                access: read, path: keyVersionPath, response: WorkflowSchemas.version, errors: [.notFound],
                handler: { g, c in try await g.getWorkflowVersion(c) }),
            GatewayRoute(
                "POST", "/v1/workflows/{key}/enable", id: "enableWorkflow",
                "Enable a workflow: its trigger starts runs again",
                access: write, path: keyPath, response: WorkflowSchemas.summary, errors: [.notFound],
                handler: { g, c in try await g.setWorkflowEnabled(c, true) }),
            GatewayRoute(
                "POST", "/v1/workflows/{key}/disable", id: "disableWorkflow",
                "Disable a workflow: its trigger starts no new runs (running runs go on)",
                access: write, path: keyPath, response: WorkflowSchemas.summary, errors: [.notFound],
                handler: { g, c in try await g.setWorkflowEnabled(c, false) }),
            GatewayRoute(
                "POST", "/v1/workflows/{key}/dry-run", id: "dryRunWorkflow",
                "Walk a workflow for a sample or real subscriber and trigger event on a simulated clock: the timeline with every decision and the rendered content; sends and stores nothing",
                access: read, path: keyPath, body: WorkflowSchemas.dryRunRequest,
                response: WorkflowSchemas.dryRunResponse,
                errors: [.notFound], handler: { g, c in try await g.dryRunWorkflow(c) })
        ] + WorkflowRunRoutes.routes
    }

    static let keyPath: [String: TextRule] = ["key": FieldRules.keyRule]
    static let keyVersionPath: [String: TextRule] = ["key": FieldRules.keyRule, "n": FieldRules.versionRule]

    static func key(_ context: RequestContext) throws(APIError) -> String {
        try Gateway.pathParameter(context, "key", rule: FieldRules.keyRule)
    }

    static let summaryColumns = """
        w.key, w.current_version, w.enabled, w.trigger_event, \(isoColumn("w.created_at", as: "created_at")), \
        \(isoColumn("w.updated_at", as: "updated_at"))
        """

    static func summary(_ row: PostgresRow) throws -> [String: JSONValue] {
        [
            "key": try row.text("key"), "version": .int(Int64(try row.decode(Int.self, named: "current_version"))),
            "enabled": try row.bool("enabled"), "triggerEvent": try row.text("trigger_event"),
            "createdAt": try row.text("created_at"), "updatedAt": try row.text("updated_at")
        ]
    }

    /// The summary plus the version's definition, digest and time.
    static func full(_ row: PostgresRow) throws -> [String: JSONValue] {
        var o = try summary(row)
        o["versionCreatedAt"] = try row.text("version_created_at")
        o["digest"] = .string(Hex.string(try row.decode(Data.self, named: "digest")))
        o["definition"] = try definitionJSON(try row.decode(String.self, named: "definition"))
        return o
    }

    static func definitionJSON(_ text: String) throws -> JSONValue {
        do { return try JSONValue.parse(text) } catch { throw APIError.internalError }
    }

    static let fullQuery = """
        SELECT \(summaryColumns), v.definition, v.digest, \(isoColumn("v.created_at", as: "version_created_at"))
        FROM workflows w JOIN workflow_versions v
          ON v.tenant_id = w.tenant_id AND v.workflow_key = w.key AND v.version = w.current_version
        WHERE w.tenant_id = $1::uuid AND w.key = $2 AND w.deleted_at IS NULL
        """
}

extension Gateway {
    func saveWorkflow(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try WorkflowRoutes.key(context)
        let definition: WorkflowDefinition
        let requestBody = try context.request.jsonBody()
        switch WorkflowDefinition.parse(requestBody) {
        case .success(let d): definition = d
        case .failure(let rejection): throw rejection.apiError
        }
        let canonical = String(decoding: definition.canonicalJSON, as: UTF8.self)
        let digest = Data(Digest.sha256(definition.canonicalJSON))
        let (row, status, changed) = try await postgres.withTransaction { tx -> (PostgresRow, Int, Bool) in
            try await WorkflowCategories.check(requestBody, tenant: tenant, on: tx)
            func current() async throws -> PostgresRow? {
                try await tx.query(
                    """
                    SELECT w.current_version, w.enabled, (w.deleted_at IS NOT NULL) AS deleted, v.digest
                    FROM workflows w JOIN workflow_versions v
                      ON v.tenant_id = w.tenant_id AND v.workflow_key = w.key AND v.version = w.current_version
                    WHERE w.tenant_id = $1::uuid AND w.key = $2 FOR UPDATE OF w
                    """, [tenant, key]
                ).first
            }
            var existing = try await current()
            var status = 200
            var changed = false
            if existing == nil {
                // First save; a concurrent first save of the same key makes this insert nothing.
                let inserted = try await tx.execute(
                    """
                    INSERT INTO workflows (tenant_id, key, current_version, enabled, trigger_event)
                    VALUES ($1::uuid, $2, 1, $3, $4) ON CONFLICT DO NOTHING
                    """, [tenant, key, definition.enabled ?? true, definition.trigger.event])
                if inserted == 1 {
                    try await tx.execute(
                        """
                        INSERT INTO workflow_versions (tenant_id, workflow_key, version, definition, digest)
                        VALUES ($1::uuid, $2, 1, $3, $4)
                        """, [tenant, key, canonical, digest])
                    status = 201
                    changed = true
                } else {
                    existing = try await current()
                }
            }
            if let existing {
                let version = try existing.decode(Int.self, named: "current_version")
                let deleted = try existing.decode(Bool.self, named: "deleted")
                let sameDefinition = try existing.decode(Data.self, named: "digest") == digest
                if sameDefinition && !deleted {
                    if let enabled = definition.enabled, enabled != (try existing.decode(Bool.self, named: "enabled")) {
                        try await tx.execute(
                            "UPDATE workflows SET enabled = $3, updated_at = now() WHERE tenant_id = $1::uuid AND key = $2",
                            [tenant, key, enabled])
                        try await self.notifyWorkflowChange(
                            tx, tenant: tenant, key: key, change: enabled ? "enabled" : "disabled",
                            version: version)
                    }
                } else {
                    // A changed definition (or a deleted workflow saved again): a new version.
                    let next = version + 1
                    try await tx.execute(
                        """
                        INSERT INTO workflow_versions (tenant_id, workflow_key, version, definition, digest)
                        VALUES ($1::uuid, $2, $3, $4, $5)
                        """, [tenant, key, next, canonical, digest])
                    try await tx.execute(
                        """
                        UPDATE workflows SET current_version = $3, trigger_event = $4, updated_at = now(), deleted_at = NULL,
                            enabled = CASE WHEN $5::boolean IS NOT NULL THEN $5::boolean WHEN deleted_at IS NOT NULL THEN true ELSE enabled END
                        WHERE tenant_id = $1::uuid AND key = $2
                        """, [tenant, key, next, definition.trigger.event, definition.enabled])
                    status = deleted ? 201 : 200
                    changed = true
                }
            }
            if changed {
                let version = try existing.map { try $0.decode(Int.self, named: "current_version") + 1 } ?? 1
                try await self.notifyWorkflowChange(tx, tenant: tenant, key: key, change: "saved", version: version)
            }
            guard let row = try await tx.query(WorkflowRoutes.fullQuery, [tenant, key]).first else {
                throw APIError.internalError
            }
            return (row, status, changed)
        }
        var body = try WorkflowRoutes.full(row)
        body["changed"] = .bool(changed)
        return .json(.object(body), status: status)
    }

    /// `pg_notify` on the changes channel, delivered when the transaction commits.
    func notifyWorkflowChange(_ tx: PostgresConnection, tenant: UUID, key: String, change: String, version: Int)
        async throws
    {
        let payload: JSONValue = [
            "tenantId": .string(tenant.lowercasedText), "key": .string(key), "change": .string(change),
            "version": .int(Int64(version))
        ]
        _ = try await tx.query("SELECT pg_notify($1, $2)", [WorkflowRoutes.changesChannel, payload.jsonString])
    }

    func listWorkflows(_ context: RequestContext) async throws -> Response {
        let page = try Page(context.request)
        let rows = try await postgres.query(
            """
            SELECT \(WorkflowRoutes.summaryColumns) FROM workflows w
            WHERE w.tenant_id = $1::uuid AND w.deleted_at IS NULL AND ($2::text IS NULL OR w.key > $2) ORDER BY w.key LIMIT $3
            """, [try context.tenant, page.after, page.limit + 1])
        return page.response(try rows.map(WorkflowRoutes.summary)) { $0["key"]?.stringValue ?? "" }
    }

    func getWorkflow(_ context: RequestContext) async throws -> Response {
        let rows = try await postgres.query(
            WorkflowRoutes.fullQuery, [try context.tenant, try WorkflowRoutes.key(context)])
        guard let row = rows.first else { throw APIError.notFound("workflow") }
        return .json(.object(try WorkflowRoutes.full(row)))
    }

    func getWorkflowVersion(_ context: RequestContext) async throws -> Response {
        let key = try WorkflowRoutes.key(context)
        // A version number that cannot exist is simply not found.
        guard FieldRules.versionRule.accepts(context.parameter("n")), let n = Int(context.parameter("n")) else {
            throw APIError.notFound("workflow version")
        }
        let rows = try await postgres.query(
            """
            SELECT v.workflow_key AS key, v.version, v.definition, v.digest, \(isoColumn("v.created_at", as: "created_at"))
            FROM workflow_versions v JOIN workflows w ON w.tenant_id = v.tenant_id AND w.key = v.workflow_key
            WHERE v.tenant_id = $1::uuid AND v.workflow_key = $2 AND v.version = $3 AND w.deleted_at IS NULL
            """, [try context.tenant, key, n])
        guard let row = rows.first else { throw APIError.notFound("workflow version") }
        return .json([
            "key": try row.text("key"), "version": .int(Int64(try row.decode(Int.self, named: "version"))),
            "digest": .string(Hex.string(try row.decode(Data.self, named: "digest"))),
            "createdAt": try row.text("created_at"),
            "definition": try WorkflowRoutes.definitionJSON(try row.decode(String.self, named: "definition"))
        ])
    }

    func setWorkflowEnabled(_ context: RequestContext, _ enabled: Bool) async throws -> Response {
        let tenant = try context.tenant
        let key = try WorkflowRoutes.key(context)
        let row = try await postgres.withTransaction { tx -> PostgresRow in
            guard
                let row = try await tx.query(
                    """
                    UPDATE workflows w SET enabled = $3, updated_at = CASE WHEN enabled = $3 THEN updated_at ELSE now() END
                    WHERE w.tenant_id = $1::uuid AND w.key = $2 AND w.deleted_at IS NULL RETURNING \(WorkflowRoutes.summaryColumns)
                    """, [tenant, key, enabled]
                ).first
            else { throw APIError.notFound("workflow") }
            try await self.notifyWorkflowChange(
                tx, tenant: tenant, key: key, change: enabled ? "enabled" : "disabled",
                version: try row.decode(Int.self, named: "current_version"))
            return row
        }
        return .json(.object(try WorkflowRoutes.summary(row)))
    }

    func deleteWorkflow(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try WorkflowRoutes.key(context)
        let (deleted, cancelled) = try await postgres.withTransaction { tx -> (Bool, Int) in
            guard
                let row = try await tx.query(
                    """
                    UPDATE workflows SET deleted_at = now(), enabled = false, updated_at = now()
                    WHERE tenant_id = $1::uuid AND key = $2 AND deleted_at IS NULL RETURNING current_version
                    """, [tenant, key]
                ).first
            else { return (false, 0) }
            try await self.notifyWorkflowChange(
                tx, tenant: tenant, key: key, change: "deleted",
                version: try row.decode(Int.self, at: 0))
            // In the same transaction: a cancel request in every running run's inbox, due now.
            let cancelled = try await WorkflowRunStore.requestCancelAll(
                on: tx, tenantId: tenant, workflowKey: key,
                reason: "the workflow was deleted")
            return (true, cancelled)
        }
        return .json(["key": .string(key), "deleted": .bool(deleted), "runsCancelled": .int(Int64(cancelled))])
    }
}
