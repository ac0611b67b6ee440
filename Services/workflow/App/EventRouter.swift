import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation

/// The `bk:events` consumer: for each new event, in order, (1) its subscriber's running runs that
/// react to its name (cancelOn, waitFor) get it in their inbox and become due now, and (2) every
/// enabled workflow it triggers (name and `where`) starts a run, once per (workflow, event id)
/// whatever the redeliveries, or, for a workflow that digests, joins the open digest of its key
/// (issue 28). A read's entries are absorbed together, in one transaction per group of
/// subscribers and a few statements whatever their number; a group that fails is absorbed again
/// one entry at a time, so an entry that fails alone stays pending for a retry, and after
/// `maxDeliveries` goes to `{bk:events}:dead`.
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

    /// The consumer's batch handler: the entries in lanes, one per subscriber (order matters
    /// within one: a trigger before the event that cancels it), lanes in `eventsConcurrency`
    /// groups absorbed side by side (different subscribers' runs and inboxes never meet).
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
        guard width > 1 else { return await handle(group: Array(lanes.joined())) }
        var groups = [[StreamEntry]](repeating: [], count: width)
        for (i, lane) in lanes.enumerated() { groups[i % width] += lane }
        return await withTaskGroup(of: [StreamEntryID: any Error].self) { group in
            for entries in groups { group.addTask { await self.handle(group: entries) } }
            var failures: [StreamEntryID: any Error] = [:]
            for await some in group { failures.merge(some) { first, _ in first } }
            return failures
        }
    }

    /// One group in one transaction; if that fails, each entry in its own.
    private func handle(group entries: [StreamEntry]) async -> [StreamEntryID: any Error] {
        var failures: [StreamEntryID: any Error] = [:]
        var batches: [(id: StreamEntryID, batch: PublishedEventBatch)] = []
        for entry in entries {
            do {
                batches.append((entry.id, try PublishedEventBatch(entry: entry)))
            } catch {
                logger.warning("workflow.events.failed", metadata: ["entry": entry.id.description, "error": "\(error)"])
                failures[entry.id] = error
            }
        }
        guard !batches.isEmpty else { return failures }
        do {
            try await absorb(batches.map(\.batch))
        } catch {
            if batches.count > 1 {
                logger.debug(
                    "workflow.events.group.failed", metadata: ["entries": "\(batches.count)", "error": "\(error)"])
            }
            for (id, batch) in batches {
                do {
                    if batches.count > 1 { try await absorb([batch]) } else { throw error }
                } catch {
                    logger.warning("workflow.events.failed", metadata: ["entry": id.description, "error": "\(error)"])
                    failures[id] = error
                }
            }
        }
        return failures
    }

    struct Counts {
        var started = 0
        var ended: [WorkflowRunStatus] = []
        var skipped = 0
        var routed = 0
        var digestsOpened = 0
        var digestJoins = 0
    }

    /// One subscriber's events in what is being absorbed, in stream order.
    struct Lane {
        var tenant: UUID
        var subscriberId: String
        var events: [WorkflowEvent] = []
        /// When each event's entry was received: a run started by it looks back at what arrived later.
        var receivedAt: [Date] = []
    }

    /// A run an event starts, walked to its first wait, not yet inserted.
    struct Started {
        var lane: Int
        /// The position of its trigger in the lane: the lane's later events may reach it.
        var index: Int
        var insert: WorkflowRunInsert
        var messages: [WorkflowMessageInsert]
    }

    /// The trigger events of one digest window in what is being absorbed (issue 28): one
    /// (tenant, workflow, subscriber, key), in order of arrival.
    struct DigestGroup {
        var lane: Int
        var workflow: WorkflowCatalog.Triggered
        var subscriber: WorkflowSubscriber
        var settings: WorkflowCatalog.Settings
        var window: WorkflowDigestState
        var arrivals: [(index: Int, event: WorkflowEvent)]
    }

    /// Entries in one transaction and a few statements whatever their number: (1) every event
    /// to its subscriber's runs that existed before; (2) the runs they start, each walked to its
    /// first wait, and the digests they open or join; (3) runs inserted together (a redelivered
    /// entry's exist already: nothing twice), their sends written; (4) each lane's events after a
    /// run's trigger that it reacts to, into its inbox (the order of one statement per event).
    /// On a redelivery (1) leaves out the runs the entries themselves started: they had their events.
    func absorb(_ batches: [PublishedEventBatch]) async throws {
        var lanes: [Lane] = []
        var laneOf: [String: Int] = [:]
        for batch in batches {
            let key = "\(batch.tenantId.lowercasedText)/\(batch.subscriberId)"
            let lane = laneOf[key] ?? lanes.count
            if lane == lanes.count {
                laneOf[key] = lane
                lanes.append(Lane(tenant: batch.tenantId, subscriberId: batch.subscriberId))
            }
            let receivedAt = Date(timeIntervalSince1970: Double(batch.receivedAtMicroseconds) / 1_000_000)
            for event in batch.publishedEvents {
                lanes[lane].events.append(
                    WorkflowEvent(
                        id: event.eventId, name: event.name, data: .object(event.data), occurredAt: event.timestamp))
                lanes[lane].receivedAt.append(receivedAt)
            }
        }
        let now = configuration.clock.now()
        var counts = Counts()
        let messages = try await postgres.withTransaction { tx -> [WorkflowMessageInsert] in
            counts.routed += try await WorkflowRunStore.route(
                on: tx, lanes: lanes.map { ($0.tenant, $0.subscriberId, $0.events) })
            // Runs started below decide their sends one by one: their cap locks first, in order.
            try await Policy.lockCounters(lanes.map { ($0.tenant, $0.subscriberId) }, on: tx)
            var lookBacks: [String: [WorkflowEvent]] = [:]
            var started: [Started] = []
            var digests: [DigestGroup] = []
            var digestOf: [String: Int] = [:]
            var tenants: [UUID] = []
            for lane in lanes where !tenants.contains(lane.tenant) { tenants.append(lane.tenant) }
            for tenant in tenants {
                let mine = lanes.indices.filter { lanes[$0].tenant == tenant }
                let names = Set(mine.flatMap { lanes[$0].events.map(\.name) })
                let triggered = try await catalog.triggered(on: tx, tenantId: tenant, names: Array(names))
                guard !triggered.isEmpty else { continue }
                let triggering = mine.filter { lanes[$0].events.contains { triggered[$0.name] != nil } }
                let subscribers = try await catalog.subscribers(
                    on: tx, tenantId: tenant, ids: triggering.map { lanes[$0].subscriberId })
                var settings: WorkflowCatalog.Settings?
                for l in triggering {
                    let lane = lanes[l]
                    for (index, event) in lane.events.enumerated() {
                        for workflow in triggered[event.name] ?? [] {
                            guard let known = subscribers[lane.subscriberId] else {
                                if try await WorkflowRunStore.recordSkip(
                                    on: tx, tenantId: tenant, workflowKey: workflow.key, triggerKey: event.id,
                                    subscriberId: lane.subscriberId,
                                    reason: WorkflowRunFailure.Code.subscriberUnknown.rawValue)
                                {
                                    counts.skipped += 1
                                }
                                continue
                            }
                            guard WorkflowEngine.triggers(workflow.definition, event: event, subscriber: known) else {
                                continue
                            }
                            if settings == nil { settings = try await catalog.settings(on: tx, tenantId: tenant) }
                            if let window = WorkflowEngine.digestWindow(workflow.definition, trigger: event, now: now) {
                                let key = "\(l)/\(workflow.key)/\(window.key)"
                                if let g = digestOf[key] {
                                    digests[g].arrivals.append((index, event))
                                } else {
                                    digestOf[key] = digests.count
                                    digests.append(
                                        DigestGroup(
                                            lane: l, workflow: workflow, subscriber: known, settings: settings!,
                                            window: window, arrivals: [(index, event)]))
                                }
                                continue
                            }
                            started.append(
                                try await start(
                                    workflow, lane: l, at: index, lanes: lanes, subscriber: known,
                                    settings: settings!, now: now, on: tx, lookBacks: &lookBacks))
                        }
                    }
                }
            }
            let inserted = try await WorkflowRunStore.insertStarted(on: tx, started.map(\.insert))
            var runs = started.filter { inserted.contains($0.insert.id) }
            runs += try await absorbDigests(
                digests, lanes: lanes, now: now, on: tx, counts: &counts, lookBacks: &lookBacks)
            var sends: [WorkflowMessageInsert] = []
            var later: [(runId: UUID, event: WorkflowEvent)] = []
            for run in runs {
                counts.started += 1
                let status = run.insert.state.status
                if status != .running { counts.ended.append(status) }
                sends += run.messages
                guard status == .running, !run.insert.reactsTo.isEmpty else { continue }
                for event in lanes[run.lane].events[(run.index + 1)...] where run.insert.reactsTo.contains(event.name) {
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
        metrics.digestsOpened.increment(by: counts.digestsOpened)
        metrics.digestJoins.increment(by: counts.digestJoins)
        metrics.sends.increment(by: messages.count)
        await RunWorker.publish(messages, redis: redis, stream: configuration.messagesStream, logger: logger)
    }

    /// The digest groups (issue 28): each window opened or joined (rows locked, in key order),
    /// every event written once into its run's digest, and a run started for each window opened.
    /// A window opened for events that were all counted before (a redelivery after the close), or
    /// whose run cannot be inserted (its trigger started a run of a version without the digest),
    /// is undone, and the group's other new events go round again. Answers the runs started.
    private func absorbDigests(
        _ groups: [DigestGroup], lanes: [Lane], now: Date, on tx: PostgresConnection, counts: inout Counts,
        lookBacks: inout [String: [WorkflowEvent]]
    ) async throws -> [Started] {
        var pending = groups
        var runs: [Started] = []
        while !pending.isEmpty {
            let candidates = pending.map { _ in UUID.timeOrdered() }
            let windowRuns = try await WorkflowRunStore.openOrJoinDigests(
                on: tx,
                pending.enumerated().map { i, g in
                    WorkflowDigestWindowRequest(
                        tenantId: lanes[g.lane].tenant, workflowKey: g.workflow.key, subscriberId: g.subscriber.id,
                        key: g.window.key, candidateRunId: candidates[i], closesAt: g.window.closesAt)
                }, now: now)
            var inserts: [WorkflowDigestEventInsert] = []
            for (i, g) in pending.enumerated() {
                for arrival in g.arrivals {
                    inserts.append(
                        WorkflowDigestEventInsert(
                            tenantId: lanes[g.lane].tenant, workflowKey: g.workflow.key, runId: windowRuns[i],
                            event: arrival.event))
                }
            }
            let fresh = try await WorkflowRunStore.collectDigestEvents(on: tx, inserts, joinedAt: now)
            var drop: [WorkflowDigestClose] = []
            var openers: [(group: Int, run: Started, new: [(index: Int, event: WorkflowEvent)])] = []
            for (i, g) in pending.enumerated() {
                let tenant = lanes[g.lane].tenant
                let new = g.arrivals.filter {
                    fresh.contains(.init(tenantId: tenant, workflowKey: g.workflow.key, eventId: $0.event.id))
                }
                guard windowRuns[i] == candidates[i] else {
                    counts.digestJoins += new.count
                    continue
                }
                let close = WorkflowDigestClose(
                    runId: candidates[i], tenantId: tenant, workflowKey: g.workflow.key, subscriberId: g.subscriber.id,
                    key: g.window.key)
                guard let first = new.first else {
                    drop.append(close)
                    continue
                }
                let run = try await start(
                    g.workflow, lane: g.lane, at: first.index, lanes: lanes, subscriber: g.subscriber,
                    settings: g.settings, now: now, on: tx, lookBacks: &lookBacks, runId: candidates[i])
                openers.append((i, run, new))
            }
            let inserted = try await WorkflowRunStore.insertStarted(on: tx, openers.map(\.run.insert))
            var next: [DigestGroup] = []
            for (i, run, new) in openers {
                let isRun = inserted.contains(run.insert.id)
                if isRun { runs.append(run) }
                if isRun && run.insert.state.status == .running {
                    counts.digestsOpened += 1
                    counts.digestJoins += new.count - 1
                    continue
                }
                drop.append(
                    WorkflowDigestClose(
                        runId: run.insert.id, tenantId: lanes[pending[i].lane].tenant,
                        workflowKey: pending[i].workflow.key, subscriberId: pending[i].subscriber.id,
                        key: pending[i].window.key))
                var rest = pending[i]
                rest.arrivals = Array(new.dropFirst())
                if !rest.arrivals.isEmpty { next.append(rest) }
            }
            try await WorkflowRunStore.dropDigests(on: tx, drop)
            pending = next
        }
        return runs
    }

    /// Starts one run in memory: the engine walks it to its first wait, then the subscriber's
    /// events from later entries that it reacts to are applied (another replica may have routed
    /// them before the run existed: a cancel right after the trigger; read once per lane for the
    /// same names).
    private func start(
        _ workflow: WorkflowCatalog.Triggered, lane l: Int, at index: Int, lanes: [Lane],
        subscriber: WorkflowSubscriber, settings: WorkflowCatalog.Settings, now: Date, on tx: PostgresConnection,
        lookBacks: inout [String: [WorkflowEvent]], runId id: UUID = UUID.timeOrdered()
    ) async throws -> Started {
        let lane = lanes[l]
        let trigger = lane.events[index]
        let tenant = lane.tenant
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
            let receivedAt = lane.receivedAt[index]
            let key = "\(l)/\(EventTimestamp.microseconds(receivedAt))/" + reacts.joined(separator: "\u{1F}")
            let laterEntries: [WorkflowEvent]
            if let known = lookBacks[key] {
                laterEntries = known
            } else {
                laterEntries = try await WorkflowRunStore.eventsReceived(
                    on: tx, tenantId: tenant, subscriberId: subscriber.id, names: reacts, after: receivedAt)
                lookBacks[key] = laterEntries
            }
            for event in laterEntries where result.state.status == .running && event.id != trigger.id {
                let advance = WorkflowEngine.advance(
                    result.state, definition: workflow.definition, input: .event(event),
                    environment: environment)
                try await advancer.apply(advance, to: &result)
            }
        }
        return Started(
            lane: l, index: index,
            insert: WorkflowRunInsert(
                id: id, tenantId: tenant, triggerKey: trigger.id, reactsTo: reacts, state: result.state),
            messages: result.messages)
    }
}
