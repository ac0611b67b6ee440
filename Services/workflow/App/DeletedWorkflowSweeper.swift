import BuzzKitCore
import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflowRuns
import Foundation

/// Cancels the running runs of deleted workflows: on every `deleted` notification of
/// `bk_workflow_changes` (the gateway's DELETE), and, because NOTIFY is not durable, at start and
/// every `deletedSweepInterval` for every workflow with `deleted_at` set. The cancels are inbox
/// inputs (`WorkflowRunStore.requestCancelAll`); the run workers apply them. Two `BackgroundLoop`s
/// in one task group: the listener (listens again 1 s after its connection failed) and the sweep.
final class DeletedWorkflowSweeper: Service {
    let name = "workflow.deleted"
    let postgres: PostgresClient
    let configuration: WorkflowConfiguration
    let logger: Logger
    private let listening: BackgroundLoop
    private let sweeping: BackgroundLoop

    init(postgres: PostgresClient, configuration: WorkflowConfiguration, logger: Logger, metrics: MetricsRegistry) {
        self.postgres = postgres
        self.configuration = configuration
        self.logger = logger
        listening = BackgroundLoop(
            name: "workflow.deleted.listen", interval: .seconds(1), logger: logger, metrics: metrics)
        sweeping = BackgroundLoop(
            name: "workflow.deleted.sweep", interval: configuration.deletedSweepInterval, logger: logger,
            metrics: metrics)
    }

    func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.listening.run { try await self.listen() } }
            group.addTask { await self.sweeping.run { try await self.sweep() } }
        }
    }

    func shutdown() async {
        listening.stop()
        sweeping.stop()
    }

    /// Cancels the runs of each workflow a notification says was deleted, until the connection
    /// fails or the service stops.
    private func listen() async throws {
        let notifications = try await postgres.listen("bk_workflow_changes")
        _ = try await listening.untilStopped { [postgres, logger] in
            for try await notification in notifications {
                guard let change = try? JSONValue.parse(notification.payload), change["change"] == "deleted",
                    let tenant = change["tenantId"]?.stringValue.flatMap({ UUID(uuidText: $0) }),
                    let key = change["key"]?.stringValue
                else { continue }
                let count = try await WorkflowRunStore(postgres: postgres)
                    .requestCancelAll(tenantId: tenant, workflowKey: key, reason: "workflow deleted")
                logger.info("workflow.deleted.cancel", metadata: ["workflow": key, "runs": String(count)])
            }
        }
    }

    /// One sweep of every deleted workflow's running runs.
    private func sweep() async throws {
        let count = try await postgres.withConnection {
            try await WorkflowRunStore.cancelRunsOfDeletedWorkflows(on: $0)
        }
        if count > 0 { logger.info("workflow.deleted.sweep", metadata: ["runs": String(count)]) }
    }
}
