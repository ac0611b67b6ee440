import BuzzKitCore
import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflowRuns
import Foundation

/// Cancels the running runs of deleted workflows: on every `deleted` notification of
/// `bk_workflow_changes` (the gateway's DELETE), and, because NOTIFY is not durable, at start and
/// every `deletedSweepInterval` for every workflow with `deleted_at` set. The cancels are inbox
/// inputs (`WorkflowRunStore.requestCancelAll`); the run workers apply them.
final class DeletedWorkflowSweeper: Service {
    let name = "workflow.deleted"
    let postgres: PostgresClient
    let configuration: WorkflowConfiguration
    let logger: Logger
    private let stopped = OneShot<Void>()

    init(postgres: PostgresClient, configuration: WorkflowConfiguration, logger: Logger) {
        self.postgres = postgres
        self.configuration = configuration
        self.logger = logger
    }

    func run() async throws {
        let listening = Task { [postgres, logger] in
            while !Task.isCancelled {
                do {
                    for try await notification in try await postgres.listen("bk_workflow_changes") {
                        guard let change = try? JSONValue.parse(notification.payload), change["change"] == "deleted",
                            let tenant = change["tenantId"]?.stringValue.flatMap({ UUID(uuidText: $0) }),
                            let key = change["key"]?.stringValue
                        else { continue }
                        let count = try await WorkflowRunStore(postgres: postgres)
                            .requestCancelAll(tenantId: tenant, workflowKey: key, reason: "workflow deleted")
                        logger.info("workflow.deleted.cancel", metadata: ["workflow": key, "runs": String(count)])
                    }
                } catch {
                    logger.debug("workflow.deleted.listen.failed", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
        defer { listening.cancel() }
        while !stopped.isFulfilled {
            do {
                let count = try await postgres.withConnection {
                    try await WorkflowRunStore.cancelRunsOfDeletedWorkflows(on: $0)
                }
                if count > 0 { logger.info("workflow.deleted.sweep", metadata: ["runs": String(count)]) }
            } catch {
                logger.warning("workflow.deleted.sweep.failed", metadata: ["error": "\(error)"])
            }
            await RunWorker.pause(configuration.deletedSweepInterval, unless: stopped)
        }
    }

    func shutdown() async { stopped.fulfill(()) }
}
