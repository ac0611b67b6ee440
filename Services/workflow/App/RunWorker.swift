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

/// Advances runs that are due: claims up to `claimBatch` rows (`FOR UPDATE SKIP LOCKED`, so
/// replicas and workers never take the same run), applies each one's inbox and due timer in
/// the order they arrived, writes the new states with their timers and the sends' message rows,
/// commits, then puts the messages on `bk:messages` (apns-sender's outbox sweeper re-enqueues any
/// a crash right after the commit left behind). A crash before the commit rolls everything back:
/// the run is due again and its sends, with the same message ids, are written once.
final class RunWorker: Service {
    let name: String
    let postgres: PostgresClient
    let redis: RedisClient
    let catalog: WorkflowCatalog
    let configuration: WorkflowConfiguration
    let metrics: WorkflowMetrics
    let logger: Logger
    /// Claims again at once after a full batch, after `pollInterval` otherwise; backs off from
    /// 100 ms to 5 s while claims fail.
    private let loop: BackgroundLoop

    init(
        number: Int, postgres: PostgresClient, redis: RedisClient, catalog: WorkflowCatalog,
        configuration: WorkflowConfiguration,
        metrics: WorkflowMetrics, registry: MetricsRegistry, logger: Logger
    ) {
        name = "workflow.runs.\(number)"
        self.postgres = postgres
        self.redis = redis
        self.catalog = catalog
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        loop = BackgroundLoop(
            name: name, interval: configuration.pollInterval, failureBackoff: .milliseconds(100)...(.seconds(5)),
            logger: logger, metrics: registry)
    }

    func run() async throws {
        await loop.runPaced({ try await tick() < configuration.claimBatch ? .interval : .immediately })
    }

    func shutdown() async { loop.stop() }

    /// One claim: answers how many runs it advanced.
    func tick() async throws -> Int {
        let now = configuration.clock.now()
        var messages: [WorkflowMessageInsert] = []
        var outcomes: [(started: Bool, ended: WorkflowRunStatus?, timers: Int, lateness: [Double], sends: Int)] = []
        let claimedCount = try await postgres.withTransaction { tx -> Int in
            let claimed = try await WorkflowRunStore.claimDue(on: tx, now: now, limit: configuration.claimBatch)
            // The runs' sends are decided one by one below: their cap locks first, in order.
            try await Policy.lockCounters(
                claimed.map { ($0.record.tenantId, $0.record.subscriberId) }, on: tx)
            var settings: [UUID: WorkflowCatalog.Settings] = [:]
            var saves: [WorkflowRunSave] = []
            var sends: [[WorkflowMessageInsert]] = []
            let acknowledgements = try await Self.acknowledgements(of: claimed, now: now, on: tx)
            let uncategorized = try await Self.uncategorizedPolicies(of: claimed, on: tx)
            let digests = try await WorkflowRunStore.closeDigests(on: tx, Self.digestCloses(of: claimed, now: now))
            for run in claimed {
                let tenant = run.record.tenantId
                if settings[tenant] == nil { settings[tenant] = try await catalog.settings(on: tx, tenantId: tenant) }
                let outcome = try await advance(
                    run, on: tx, now: now, settings: settings[tenant]!, acknowledgements: acknowledgements,
                    digestEvents: digests[run.record.id], uncategorized: uncategorized[tenant])
                sends.append(outcome.messages)
                if let save = outcome.save { saves.append(save) }
                outcomes.append((outcome.started, outcome.ended, outcome.timers, outcome.lateness, 0))
            }
            // The claim's messages in one statement; only the new ones are published.
            let inserted = try await Ledger.insertWorkflowMessages(on: tx, sends.flatMap { $0 })
            for (i, runSends) in sends.enumerated() {
                let written = runSends.filter { inserted.contains($0.id) }
                messages += written
                outcomes[i].sends = written.count
            }
            try await WorkflowRunStore.save(on: tx, saves)
            return claimed.count
        }
        for outcome in outcomes {
            if outcome.started { metrics.runsStarted.increment() }
            if let ended = outcome.ended { metrics.finished(ended) }
            metrics.timersDue.increment(by: outcome.timers)
            for late in outcome.lateness { metrics.wakeupLateness.observe(late) }
            metrics.sends.increment(by: outcome.sends)
        }
        await Self.publish(messages, redis: redis, stream: configuration.messagesStream, logger: logger)
        return claimedCount
    }

    /// Per tenant of the claim: what the send policy decides for its pushes naming no category
    /// to the claimed runs' subscribers (`Policy.uncategorized`, one statement per tenant), when
    /// only their global opt-out can apply. A run's uncategorized send steps are then answered
    /// from it instead of a decision statement each (issue 26's workflow sends: 100,000 round
    /// trips for 100,000 runs before).
    static func uncategorizedPolicies(
        of claimed: [ClaimedWorkflowRun], on tx: PostgresConnection
    ) async throws -> [UUID: UncategorizedPolicy] {
        var subscribers: [UUID: Set<String>] = [:]
        for run in claimed { subscribers[run.record.tenantId, default: []].insert(run.record.subscriberId) }
        var policies: [UUID: UncategorizedPolicy] = [:]
        for (tenant, ids) in subscribers {
            policies[tenant] = try await Policy.uncategorized(tenant: tenant, subscribers: ids.sorted(), on: tx)
        }
        return policies
    }

    struct Outcome {
        var messages: [WorkflowMessageInsert] = []
        var started = false
        var ended: WorkflowRunStatus?
        var timers = 0
        var lateness: [Double] = []
        /// The run's new state, written with the claim's others in one statement.
        var save: WorkflowRunSave?
    }

    /// One claimed run: start it if pending, then its inputs and due timer in arrival order.
    private func advance(
        _ run: ClaimedWorkflowRun, on tx: PostgresConnection, now: Date,
        settings: WorkflowCatalog.Settings, acknowledgements: [String: Bool], digestEvents: [WorkflowEvent]?,
        uncategorized: UncategorizedPolicy?
    ) async throws -> Outcome {
        let record = run.record
        var outcome = Outcome()
        let lastInput = run.inputs.last?.id
        guard
            let definition = try await catalog.definition(
                on: tx, tenantId: record.tenantId, key: record.workflowKey,
                version: record.version)
        else {
            if let state = record.state {
                let failed = RunAdvancer.failed(
                    state, code: .definitionMissing,
                    message: "version \(record.version) of \(record.workflowKey) cannot be read", at: now)
                try await WorkflowRunStore.save(
                    on: tx, WorkflowRunSave(id: record.id, state: failed, lastInputId: lastInput))
            } else {
                try await WorkflowRunStore.failPending(on: tx, id: record.id, code: .definitionMissing, now: now)
            }
            outcome.ended = .failed
            return outcome
        }
        let environment = WorkflowEnvironment(
            now: now, quietHours: settings.quietHours, defaultTimeZone: settings.defaultTimeZone,
            messageId: RunAdvancer.messageId)
        var advancer = RunAdvancer(
            tenantId: record.tenantId, runId: record.id, definition: definition,
            environment: environment, connection: tx)
        if let localId = record.state?.localPlan?.localId, let known = acknowledgements[localId] {
            advancer.acknowledgements[localId] = known
        }
        advancer.digestEvents = digestEvents
        advancer.uncategorized = uncategorized.map { ($0, record.subscriberId) }
        var result: RunAdvancer.Result
        if let state = record.state {
            result = RunAdvancer.Result(state: state)
        } else {
            guard let trigger = record.pendingTrigger,
                let subscriber = try await catalog.subscriber(
                    on: tx, tenantId: record.tenantId, id: record.subscriberId)
            else {
                try await WorkflowRunStore.failPending(on: tx, id: record.id, code: .subscriberUnknown, now: now)
                metrics.triggersSkipped.increment()
                outcome.ended = .failed
                return outcome
            }
            // A digest (issue 28): the run opens its key's window, or its trigger joins the one open.
            if let window = WorkflowEngine.digestWindow(definition, trigger: trigger, now: now) {
                let run = try await WorkflowRunStore.openOrJoinDigests(
                    on: tx,
                    [
                        WorkflowDigestWindowRequest(
                            tenantId: record.tenantId, workflowKey: record.workflowKey, subscriberId: subscriber.id,
                            key: window.key, candidateRunId: record.id, closesAt: window.closesAt)
                    ], now: now)[0]
                _ = try await WorkflowRunStore.collectDigestEvents(
                    on: tx,
                    [
                        WorkflowDigestEventInsert(
                            tenantId: record.tenantId, workflowKey: record.workflowKey, runId: run, event: trigger)
                    ], joinedAt: now)
                if run != record.id {
                    let state = WorkflowEngine.joinedDigest(
                        runId: record.id.lowercasedText, workflowKey: record.workflowKey, version: record.version,
                        definition: definition, trigger: trigger, subscriber: subscriber,
                        digestRunId: run.lowercasedText, environment: environment)
                    outcome.started = true
                    outcome.ended = state.status
                    outcome.save = WorkflowRunSave(id: record.id, state: state, lastInputId: lastInput)
                    return outcome
                }
            }
            let start = WorkflowEngine.start(
                runId: record.id.lowercasedText, workflowKey: record.workflowKey, version: record.version,
                definition: definition, trigger: trigger, subscriber: subscriber, environment: environment)
            result = RunAdvancer.Result(state: start.state)
            try await advancer.apply(start, to: &result)
            outcome.started = true
        }
        // The inbox and the timer, in the order they arrived.
        enum Input {
            case inbox(WorkflowRunInboxItem)
            case timer(String, Date)
        }
        var inputs: [(Date, Input)] = run.inputs.map { ($0.createdAt, .inbox($0)) }
        if let token = run.timerToken, let due = record.dueAt, due <= now { inputs.append((due, .timer(token, due))) }
        inputs.sort { $0.0 < $1.0 }
        for (_, input) in inputs where result.state.status == .running {
            let engineInput: WorkflowInput
            switch input {
            case .inbox(let item):
                switch item.kind {
                case .event(let event): engineInput = .event(event)
                case .cancel(let reason): engineInput = .cancel(reason: reason)
                }
            case .timer(let token, let due):
                // The timer may have been replaced by an input applied just before.
                guard result.state.timer?.token == token else { continue }
                outcome.timers += 1
                outcome.lateness.append(max(0, now.timeIntervalSince(due)))
                engineInput = .timerFired(token: token)
            }
            let advance = WorkflowEngine.advance(
                result.state, definition: definition, input: engineInput, environment: environment)
            try await advancer.apply(advance, to: &result)
        }
        // A timer that became due while inputs were applied (e.g. a quiet-hours end in the past)
        // is picked up by the next claim: the row is due at once.
        outcome.save = WorkflowRunSave(id: record.id, state: result.state, lastInputId: lastInput)
        if result.state.status != .running { outcome.ended = result.state.status }
        outcome.messages = result.messages
        return outcome
    }

    /// The claimed runs whose local window reaches its moment now without an acknowledgement
    /// routed to them: whether their subscriber tracked `$local.scheduled` for the plan after all
    /// (the events table), one statement per tenant instead of one per run.
    static func acknowledgements(of claimed: [ClaimedWorkflowRun], now: Date, on tx: PostgresConnection)
        async throws -> [String: Bool]
    {
        var plans: [UUID: [(subscriberId: String, localId: String)]] = [:]
        for run in claimed {
            guard let state = run.record.state, let plan = state.localPlan, !plan.acknowledged,
                let due = run.record.dueAt, due <= now, run.timerToken == state.timer?.token
            else { continue }
            plans[run.record.tenantId, default: []].append((state.subscriber.id, plan.localId))
        }
        var known: [String: Bool] = [:]
        for (tenant, asked) in plans {
            let acknowledged = try await WorkflowRunStore.localScheduled(on: tx, tenantId: tenant, plans: asked)
            for plan in asked { known[plan.localId] = acknowledged.contains(plan.localId) }
        }
        return known
    }

    /// The claimed runs whose digest window closes now (issue 28): closed together, in two
    /// statements instead of two per run.
    static func digestCloses(of claimed: [ClaimedWorkflowRun], now: Date) -> [WorkflowDigestClose] {
        claimed.compactMap { run in
            guard let state = run.record.state, let digest = state.digest, !digest.collecting, digest.summary == nil,
                let timer = state.timer, run.timerToken == timer.token,
                timer.token == WorkflowTimer(step: digest.step, .window, dueAt: timer.dueAt).token, timer.dueAt <= now
            else { return nil }
            return WorkflowDigestClose(
                runId: run.record.id, tenantId: run.record.tenantId, workflowKey: state.workflowKey,
                subscriberId: state.subscriber.id, key: digest.key)
        }
    }

    /// Writes the message rows in one statement; answers those that were new, in order (a
    /// re-executed step's are not).
    static func write(_ messages: [WorkflowMessageInsert], on tx: PostgresConnection) async throws
        -> [WorkflowMessageInsert]
    {
        let inserted = try await Ledger.insertWorkflowMessages(on: tx, messages)
        return messages.filter { inserted.contains($0.id) }
    }

    /// After the commit: the messages on the direct stream (a run's send goes to one subscriber),
    /// each tenant's in entries of up to 100 (`MessageEntry.messageIds`, in the order they were
    /// made, so one run's sends go out in order), with one pipelined XADD. A failure is logged
    /// only: the rows are `queued` and the sender's outbox sweeper re-enqueues them.
    static func publish(_ messages: [WorkflowMessageInsert], redis: RedisClient, stream: StreamName, logger: Logger)
        async
    {
        guard !messages.isEmpty else { return }
        var byTenant: [UUID: [UUID]] = [:]
        var tenants: [UUID] = []
        for message in messages {
            if byTenant[message.tenantId] == nil { tenants.append(message.tenantId) }
            byTenant[message.tenantId, default: []].append(message.id)
        }
        var entries: [[(String, [UInt8])]] = []
        for tenant in tenants {
            let ids = byTenant[tenant] ?? []
            for start in stride(from: 0, to: ids.count, by: 100) {
                entries.append(
                    MessageEntry(tenantId: tenant, messageIds: Array(ids[start..<min(start + 100, ids.count)])).fields)
            }
        }
        do {
            try await redis.xaddBatch(stream.direct.rawValue, entries: entries)
        } catch {
            logger.warning(
                "workflow.send.enqueue.failed",
                metadata: ["messages": String(messages.count), "error": "\(error)"])
        }
    }
}
