import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation

/// Runs through the API (issue 15): `POST /v1/workflows/{key}/trigger {to, data?}` starts a run
/// for one subscriber as if the trigger event had arrived (its `where` is the caller's to decide:
/// the route does not apply it), `GET /v1/workflows/{key}/runs` lists a workflow's runs newest
/// first, `GET /v1/workflow-runs/{id}` reads one with each step's outcome, and
/// `POST /v1/workflow-runs/{id}/cancel` asks for its cancellation. The gateway never runs the
/// engine: it writes through `WorkflowRunStore` (a pending run, a cancel input, both due at once)
/// and a workflow replica does the rest within its poll interval.
enum WorkflowRunRoutes {
    /// The statuses the API shows and filters on.
    static let runStatuses = WorkflowRunStatus.shown.map(\.rawValue)
    static let idPath: [String: TextRule] = ["id": .uuid]

    static var routes: [GatewayRoute] {
        let write = GatewayRoute.Access.tenant(.workflowsWrite, clientKeys: false)
        let read = GatewayRoute.Access.tenant(.workflowsRead, clientKeys: false)
        return [
            GatewayRoute(
                "POST", "/v1/workflows/{key}/trigger", id: "triggerWorkflow",
                "Start a run of the workflow's current version for one subscriber, as if its trigger event had arrived (the trigger's where is not applied); with an Idempotency-Key, once per key, for good",
                access: write, path: WorkflowRoutes.keyPath, body: WorkflowRunSchemas.triggerRequest,
                response: WorkflowRunSchemas.triggered, status: 202, errors: [.notFound, .workflowDisabled],
                handler: { g, c in try await g.triggerWorkflow(c) }),
            GatewayRoute(
                "GET", "/v1/workflows/{key}/runs", id: "listWorkflowRuns",
                "A workflow's runs, newest first (filter with ?subscriberId= and ?status=)",
                access: read, path: WorkflowRoutes.keyPath,
                query: [
                    QueryParameter(
                        "subscriberId", "Only this subscriber's runs (empty: every subscriber)",
                        schema: WorkflowRunSchemas.subscriberFilter),
                    QueryParameter(
                        "status",
                        "Only runs in this status (empty: every status; running includes runs not yet started)",
                        schema: ["enum": .array(([""] + runStatuses).map(JSONValue.string))])
                ],
                response: WorkflowRunSchemas.run, paginated: true, errors: [.notFound],
                handler: { g, c in try await g.listWorkflowRuns(c) }),
            GatewayRoute(
                "GET", "/v1/workflow-runs/{id}", id: "getWorkflowRun",
                "A run: its status, and each step's outcome with times, the decision taken and why, and message ids",
                access: read, path: idPath, response: WorkflowRunSchemas.run, errors: [.notFound],
                handler: { g, c in try await g.getWorkflowRun(c) }),
            GatewayRoute(
                "POST", "/v1/workflow-runs/{id}/cancel", id: "cancelWorkflowRun",
                "Cancel a run: later steps never happen (its status reads cancelled once a workflow replica has applied it, within its poll interval); a run that has ended is left as it is",
                access: write, path: idPath, response: WorkflowRunSchemas.cancelled, status: 202, errors: [.notFound],
                handler: { g, c in try await g.cancelWorkflowRun(c) })
        ]
    }

    /// The run id of a path, or 404 (anything but a UUID names no run).
    static func runID(_ context: RequestContext) throws(APIError) -> UUID {
        try Gateway.uuidParameter(context, "id", notFound: .notFound("workflow run"))
    }
}

extension Gateway {
    var runStore: WorkflowRunStore { WorkflowRunStore(postgres: postgres) }

    func triggerWorkflow(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try WorkflowRoutes.key(context)
        var v = Validator(try context.request.jsonBody(), allowed: ["to", "data"])
        let to = v.string("to", required: true, rule: FieldRules.identifierRule)
        let data = v.object("data") ?? [:]
        try v.check()
        guard let to else { throw APIError.internalError }
        // The idempotency key (the pipeline replays within 24 h) is also the run's trigger key,
        // so the same key never starts a second run, even after the record has expired.
        let idempotencyKey = context.request.headers[Idempotency.header]
        let triggerKey = WorkflowRunStore.apiTriggerKey(idempotencyKey ?? UUID().lowercasedText)
        let (run, version, subscriberExists) = try await postgres.withTransaction {
            tx -> (WorkflowRunStore.Start?, Int, Bool) in
            guard
                let row = try await tx.query(
                    """
                    SELECT w.current_version, w.enabled, v.definition FROM workflows w JOIN workflow_versions v
                      ON v.tenant_id = w.tenant_id AND v.workflow_key = w.key AND v.version = w.current_version
                    WHERE w.tenant_id = $1::uuid AND w.key = $2 AND w.deleted_at IS NULL FOR SHARE OF w
                    """, [tenant, key]
                ).first
            else { throw APIError.notFound("workflow") }
            let version = try row.decode(Int.self, at: 0)
            guard try row.decode(Bool.self, at: 1) else {
                throw APIError(.workflowDisabled, "the workflow \(key) is disabled: enable it to start runs")
            }
            let exists =
                !(try await tx.query(
                    "SELECT 1 FROM subscribers WHERE tenant_id = $1::uuid AND id = $2",
                    [tenant, to])).isEmpty
            guard exists else { return (nil, version, false) }
            guard
                case .success(let definition) = WorkflowDefinition.parse(
                    try WorkflowRoutes.definitionJSON(try row.decode(String.self, at: 2)))
            else { throw APIError.internalError }
            let trigger = WorkflowEvent(id: triggerKey, name: definition.trigger.event, data: data, occurredAt: Date())
            let start = try await WorkflowRunStore.requestStart(
                on: tx, tenantId: tenant, workflowKey: key, version: version,
                definition: definition, subscriberId: to, trigger: trigger,
                triggerKey: triggerKey)
            return (start, version, true)
        }
        guard subscriberExists, let run else {
            // A request naming a subscriber that is not there: 404, as a path naming nothing.
            throw APIError(
                .notFound, "subscriber \(to) was not found",
                details: [["path": "to", "message": .string("no subscriber with the id \(to)")]])
        }
        return .json(
            [
                "runId": .string(run.runId.lowercasedText), "workflowKey": .string(key),
                "version": .int(Int64(version)),
                "subscriberId": .string(to), "created": .bool(run.created)
            ], status: 202)
    }

    func listWorkflowRuns(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try WorkflowRoutes.key(context)
        let page = try Page(context.request)
        var issues: [ValidationIssue] = []
        var cursor: WorkflowRunCursor?
        if let after = page.after {
            cursor = WorkflowRunCursor(text: after)
            if cursor == nil {
                issues.append(ValidationIssue(path: "cursor", message: "is not a cursor this API returned"))
            }
        }
        var subscriber: String?
        if let raw = context.request.query["subscriberId"], !raw.isEmpty {
            if let problem = FieldRules.identifierRule.problem(with: raw) {
                issues.append(ValidationIssue(path: "subscriberId", message: problem))
            } else {
                subscriber = raw
            }
        }
        var status: WorkflowRunStatus?
        if let raw = context.request.query["status"], !raw.isEmpty {
            if let shown = WorkflowRunStatus(rawValue: raw), WorkflowRunStatus.shown.contains(shown) {
                status = shown
            } else {
                issues.append(
                    ValidationIssue(
                        path: "status",
                        message: "must be one of: " + WorkflowRunRoutes.runStatuses.joined(separator: ", ")))
            }
        }
        try Validator.throwIfAny(issues)
        let exists = try await postgres.query(
            "SELECT 1 FROM workflows WHERE tenant_id = $1::uuid AND key = $2 AND deleted_at IS NULL", [tenant, key])
        guard !exists.isEmpty else { throw APIError.notFound("workflow") }
        let result = try await runStore.list(
            tenantId: tenant, workflowKey: key, subscriberId: subscriber, status: status,
            after: cursor, limit: page.limit)
        let next: JSONValue = result.next.map { .string(Page.cursor(for: $0.text)) } ?? .null
        return .json(
            .array(result.runs.map(\.jsonValue)), metadata: ["cursor": next, "hasMore": .bool(result.next != nil)])
    }

    func getWorkflowRun(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        guard let run = try await runStore.run(tenantId: tenant, id: try WorkflowRunRoutes.runID(context)) else {
            throw APIError.notFound("workflow run")
        }
        return .json(run.jsonValue)
    }

    func cancelWorkflowRun(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try WorkflowRunRoutes.runID(context)
        let outcome = try await runStore.requestCancel(tenantId: tenant, runId: id, reason: "cancelled through the API")
        switch outcome {
        case .notFound: throw APIError.notFound("workflow run")
        case .requested, .alreadyEnded:
            guard let run = try await runStore.run(tenantId: tenant, id: id) else {
                throw APIError.notFound("workflow run")
            }
            return .json(["run": run.jsonValue, "cancel": .string(outcome.rawValue)], status: 202)
        }
    }
}
