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
/// the entry pending for a retry, and after `maxDeliveries` it goes to `{bk:events}:dead`.
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

    /// The consumer's batch handler: one subscriber's entries one after the other (order matters:
    /// a trigger before the event that cancels it), different subscribers' side by side,
    /// `eventsConcurrency` at once (their runs and inboxes never meet).
    func handle(_ entries: [StreamEntry]) async -> [StreamEntryID: any Error] {
        var lanes: [[StreamEntry]] = []
        var laneOf: [String: Int] = [:]
        for entry in entries {
            // An entry without them fails on its own lane.
            let key = "\(entry.string("tenant") ?? "?\(entry.id)")/\(entry.string("subscriber") ?? "")"
            if let lane = laneOf[key] {
                lanes[lane].append(entry)
            } else {
                laneOf[key] = lanes.count
                lanes.append([entry])
            }
        }
        let width = min(lanes.count, max(1, configuration.eventsConcurrency))
        guard width > 1 else { return await handle(lanes: lanes) }
        var groups = [[[StreamEntry]]](repeating: [], count: width)
        for (i, lane) in lanes.enumerated() { groups[i % width].append(lane) }
        return await withTaskGroup(of: [StreamEntryID: any Error].self) { group in
            for lanes in groups { group.addTask { await self.handle(lanes: lanes) } }
            var failures: [StreamEntryID: any Error] = [:]
            for await some in group { failures.merge(some) { first, _ in first } }
            return failures
        }
    }

    private func handle(lanes: [[StreamEntry]]) async -> [StreamEntryID: any Error] {
        var failures: [StreamEntryID: any Error] = [:]
        for entry in lanes.joined() {
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

    /// A run an event of the entry starts, walked to its first wait, not yet inserted.
    struct Started {
        /// The position of its trigger in the entry: the entry's later events may reach it.
        var index: Int
        var insert: WorkflowRunInsert
        var messages: [WorkflowMessageInsert]
    }

    /// One entry, in one transaction and a few statements whatever its size: (1) all its events
    /// to the subscriber's runs that existed before it; (2) the runs it starts, each walked to its
    /// first wait, inserted together (a redelivered entry's exist already: nothing twice), their
    /// sends written; (3) the entry's events after each one's trigger that it reacts to, into its
    /// inbox, as (1) does for older runs (so the order is that of one statement per event). On a
    /// redelivery (1) leaves out the runs the entry itself started: they had their events.
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
            let triggered = try await catalog.triggered(on: tx, tenantId: tenant, names: Array(Set(events.map(\.name))))
            counts.routed += try await WorkflowRunStore.route(
                on: tx, tenantId: tenant, subscriberId: batch.subscriberId, events: events)
            var subscriber: WorkflowSubscriber??
            var settings: WorkflowCatalog.Settings?
            var lookBacks: [[String]: [WorkflowEvent]] = [:]
            var started: [Started] = []
            for (index, event) in events.enumerated() {
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
                    started.append(
                        try await start(
                            workflow, at: index, trigger: event, subscriber: known, tenant: tenant,
                            receivedAt: receivedAt, settings: settings!, now: now, on: tx, lookBacks: &lookBacks))
                }
            }
            guard !started.isEmpty else { return [] }
            let inserted = try await WorkflowRunStore.insertStarted(on: tx, started.map(\.insert))
            var sends: [WorkflowMessageInsert] = []
            var later: [(runId: UUID, event: WorkflowEvent)] = []
            for run in started where inserted.contains(run.insert.id) {
                counts.started += 1
                let status = run.insert.state.status
                if status != .running { counts.ended.append(status.rawValue) }
                sends += run.messages
                guard status == .running, !run.insert.reactsTo.isEmpty else { continue }
                for event in events[(run.index + 1)...] where run.insert.reactsTo.contains(event.name) {
                    later.append((run.insert.id, event))
                }
            }
            let messages = try await RunWorker.write(sends, on: tx)
            counts.routed += try await WorkflowRunStore.route(on: tx, pairs: later)
            return messages
        }
        metrics.runsStarted.increment(by: counts.started)
        for status in counts.ended { metrics.finished(status) }
        metrics.triggersSkipped.increment(by: counts.skipped)
        metrics.eventsRouted.increment(by: counts.routed)
        metrics.sends.increment(by: messages.count)
        await RunWorker.publish(messages, redis: redis, stream: configuration.messagesStream, logger: logger)
    }

    /// Starts one run in memory: the engine walks it to its first wait, then the subscriber's
    /// events from later entries that it reacts to are applied (another replica may have routed
    /// them before the run existed: a cancel right after the trigger; read once per entry for the
    /// same names).
    private func start(
        _ workflow: WorkflowCatalog.Triggered, at index: Int, trigger: WorkflowEvent, subscriber: WorkflowSubscriber,
        tenant: UUID, receivedAt: Date, settings: WorkflowCatalog.Settings, now: Date, on tx: PostgresConnection,
        lookBacks: inout [[String]: [WorkflowEvent]]
    ) async throws -> Started {
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
        let reacts = workflow.definition.reactsToEvents.sorted()
        if result.state.status == .running, !reacts.isEmpty {
            let laterEntries: [WorkflowEvent]
            if let known = lookBacks[reacts] {
                laterEntries = known
            } else {
                laterEntries = try await WorkflowRunStore.eventsReceived(
                    on: tx, tenantId: tenant, subscriberId: subscriber.id, names: reacts, after: receivedAt)
                lookBacks[reacts] = laterEntries
            }
            for event in laterEntries where result.state.status == .running && event.id != trigger.id {
                let advance = WorkflowEngine.advance(
                    result.state, definition: workflow.definition, input: .event(event),
                    environment: environment)
                try await advancer.apply(advance, to: &result)
            }
        }
        return Started(
            index: index,
            insert: WorkflowRunInsert(
                id: id, tenantId: tenant, triggerKey: trigger.id, reactsTo: reacts, state: result.state),
            messages: result.messages)
    }
}
