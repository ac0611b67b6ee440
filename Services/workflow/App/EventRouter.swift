import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation

/// The `bk:events` consumer: for each new event, in order, (1) its subscriber's running runs that
/// react to its name (cancelOn, waitFor) get it in their inbox and become due now, and (2) every
/// enabled workflow it triggers (name and `where`) starts a run, once per (workflow, event id)
/// whatever the redeliveries. One transaction per entry (one identity's batch): a failure leaves
/// the entry pending for a retry, and after `maxDeliveries` it goes to `bk:events:dead`.
///
/// An unknown subscriber's trigger starts nothing and is recorded (`workflow_trigger_skips`,
/// `buzzkit_workflow_triggers_skipped_total`).
final class EventRouter: Sendable {
    let postgres: PostgresClient
    let redis: RedisClient
    let catalog: WorkflowCatalog
    let configuration: WorkflowConfiguration
    let metrics: WorkflowMetrics
    let logger: Logger

    init(
        postgres: PostgresClient, redis: RedisClient, catalog: WorkflowCatalog, configuration: WorkflowConfiguration,
        metrics: WorkflowMetrics, logger: Logger
    ) {
        self.postgres = postgres
        self.redis = redis
        self.catalog = catalog
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
    }

    /// The consumer's batch handler: entries one after the other (order matters: a trigger
    /// before the event that cancels it).
    func handle(_ entries: [StreamEntry]) async -> [StreamEntryID: any Error] {
        var failures: [StreamEntryID: any Error] = [:]
        for entry in entries {
            do {
                try await handle(entry)
            } catch {
                logger.warning("workflow.events.failed", metadata: ["entry": entry.id.description, "error": "\(error)"])
                failures[entry.id] = error
            }
        }
        return failures
    }

    struct Counts {
        var started = 0
        var ended: [String] = []
        var skipped = 0
        var routed = 0
    }

    func handle(_ entry: StreamEntry) async throws {
        let batch = try PublishedEventBatch(entry: entry)
        let receivedAt = Date(timeIntervalSince1970: Double(batch.receivedAtMicroseconds) / 1_000_000)
        let events = batch.publishedEvents.map {
            WorkflowEvent(id: $0.eventId, name: $0.name, data: .object($0.data), occurredAt: $0.timestamp)
        }
        let tenant = batch.tenantId
        let now = configuration.clock.now()
        var counts = Counts()
        let messages = try await postgres.withTransaction { tx -> [WorkflowMessageInsert] in
            var messages: [WorkflowMessageInsert] = []
            let triggered = try await catalog.triggered(on: tx, tenantId: tenant, names: Array(Set(events.map(\.name))))
            var subscriber: WorkflowSubscriber??
            var settings: WorkflowCatalog.Settings?
            for event in events {
                counts.routed += try await WorkflowRunStore.route(
                    on: tx, tenantId: tenant, subscriberId: batch.subscriberId, event: event)
                for workflow in triggered[event.name] ?? [] {
                    if subscriber == nil {
                        subscriber = .some(
                            try await catalog.subscriber(on: tx, tenantId: tenant, id: batch.subscriberId))
                    }
                    guard let known = subscriber ?? nil else {
                        if try await WorkflowRunStore.recordSkip(
                            on: tx, tenantId: tenant, workflowKey: workflow.key, triggerKey: event.id,
                            subscriberId: batch.subscriberId, reason: "subscriber_unknown")
                        {
                            counts.skipped += 1
                        }
                        continue
                    }
                    guard WorkflowEngine.triggers(workflow.definition, event: event, subscriber: known) else {
                        continue
                    }
                    if settings == nil { settings = try await catalog.settings(on: tx, tenantId: tenant) }
                    messages += try await start(
                        workflow, trigger: event, subscriber: known, tenant: tenant, receivedAt: receivedAt,
                        settings: settings!, now: now, on: tx, counts: &counts)
                }
            }
            return messages
        }
        metrics.runsStarted.increment(by: counts.started)
        for status in counts.ended { metrics.finished(status) }
        metrics.triggersSkipped.increment(by: counts.skipped)
        metrics.eventsRouted.increment(by: counts.routed)
        metrics.sends.increment(by: messages.count)
        await RunWorker.publish(messages, redis: redis, stream: configuration.messagesStream, logger: logger)
    }

    /// Starts one run: the engine walks it to its first wait, then it is inserted (unless the
    /// trigger key exists: a redelivery) with its sends' message rows.
    private func start(
        _ workflow: WorkflowCatalog.Triggered, trigger: WorkflowEvent, subscriber: WorkflowSubscriber, tenant: UUID,
        receivedAt: Date, settings: WorkflowCatalog.Settings, now: Date, on tx: PostgresConnection,
        counts: inout Counts
    ) async throws -> [WorkflowMessageInsert] {
        let id = UUID()
        let environment = WorkflowEnvironment(
            now: now, quietHours: settings.quietHours, defaultTimeZone: settings.defaultTimeZone,
            messageId: RunAdvancer.messageId)
        let advancer = RunAdvancer(
            tenantId: tenant, runId: id, definition: workflow.definition, environment: environment,
            connection: tx)
        let start = WorkflowEngine.start(
            runId: id.lowercasedText, workflowKey: workflow.key, version: workflow.version,
            definition: workflow.definition, trigger: trigger, subscriber: subscriber,
            environment: environment)
        var result = RunAdvancer.Result(state: start.state)
        try await advancer.apply(start, to: &result)
        // Events of the subscriber from later batches that another replica may have routed before
        // this run existed (a cancel right after the trigger).
        let reacts = workflow.definition.reactsToEvents.sorted()
        if result.state.status == .running, !reacts.isEmpty {
            let later = try await WorkflowRunStore.eventsReceived(
                on: tx, tenantId: tenant, subscriberId: subscriber.id,
                names: reacts, after: receivedAt)
            for event in later where result.state.status == .running && event.id != trigger.id {
                let advance = WorkflowEngine.advance(
                    result.state, definition: workflow.definition, input: .event(event),
                    environment: environment)
                try await advancer.apply(advance, to: &result)
            }
        }
        let inserted = try await WorkflowRunStore.insertStarted(
            on: tx,
            [
                WorkflowRunInsert(
                    id: id, tenantId: tenant, triggerKey: trigger.id, reactsTo: reacts, state: result.state)
            ])
        guard inserted.contains(id) else { return [] }
        counts.started += 1
        if result.state.status != .running { counts.ended.append(result.state.status.rawValue) }
        return try await RunWorker.write(result.messages, on: tx)
    }
}
