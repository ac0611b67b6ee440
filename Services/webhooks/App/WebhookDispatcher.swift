import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRetention
import BuzzKitWebhooks
import Foundation
import Synchronization

/// The replica's loop: make messages of the outbox's events, claim due messages as far as there
/// is room (`concurrency` in flight, `endpointConcurrency` per endpoint), send each in a task of
/// its own, and record what came of them (one statement per turn for everything that finished).
///
/// Replicas share the work through Postgres: the outbox and the due messages are taken with
/// `FOR UPDATE SKIP LOCKED`, so two replicas never take the same row. On SIGTERM the loop stops
/// claiming, waits for the sends under way (each bounded by the timeout) and records them before
/// `run()` returns; after a SIGKILL, what it had claimed is due again when the lease ends and
/// another replica sends it again under the same `webhook-id` (at least once).
final class WebhookDispatcher: Service {
    let name = "webhooks.dispatcher"
    let postgres: PostgresClient
    let sender: WebhookSender
    let configuration: WebhooksConfiguration
    let metrics: WebhooksMetrics
    let logger: Logger
    private let stopped = OneShot<Void>()
    private let state = Mutex(State())

    private struct State {
        var inFlight = 0
        var perEndpoint: [UUID: Int] = [:]
        var finished: [WebhookAttemptOutcome] = []
    }

    init(
        postgres: PostgresClient, sender: WebhookSender, configuration: WebhooksConfiguration,
        metrics: WebhooksMetrics, logger: Logger
    ) {
        self.postgres = postgres
        self.sender = sender
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
    }

    func shutdown() async { stopped.fulfill(()) }

    func run() async throws {
        await withDiscardingTaskGroup { group in
            var backoff = Duration.milliseconds(100)
            while !stopped.isFulfilled {
                do {
                    let busy = try await turn(group: &group)
                    backoff = .milliseconds(100)
                    if !busy { await pause(configuration.pollInterval) }
                } catch {
                    logger.warning("webhooks.turn.failed", metadata: ["error": "\(error)"])
                    await pause(backoff)
                    backoff = min(backoff * 2, .seconds(5))
                }
            }
        }
        // Every send has ended: record them (retried while Postgres is away, up to the group's timeout).
        var attempt = 0
        while true {
            do {
                try await flush()
                return
            } catch {
                attempt += 1
                logger.warning("webhooks.record.failed", metadata: ["error": "\(error)", "attempt": "\(attempt)"])
                if attempt >= 20 { throw error }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// One turn: record what finished, form messages, claim and start sends. True when there may
    /// be more to do at once (a full claim or a full form).
    private func turn(group: inout DiscardingTaskGroup) async throws -> Bool {
        try await flush()
        let formed = try await WebhookDeliveryStore.form(on: postgres, limit: configuration.formBatch)
        metrics.eventsTaken.increment(by: formed.events)
        let (free, busy) = state.withLock { state in
            (
                configuration.concurrency - state.inFlight,
                state.perEndpoint.filter { $0.value >= configuration.endpointConcurrency }.map(\.key)
            )
        }
        guard free > 0 else { return false }
        let limit = min(free, configuration.claimBatch)
        let claimed = try await WebhookDeliveryStore.claim(
            on: postgres, limit: limit, replica: configuration.consumerName, lease: configuration.lease,
            excluding: busy)
        for message in claimed {
            state.withLock { state in
                state.inFlight += 1
                state.perEndpoint[message.endpointId, default: 0] += 1
            }
            metrics.inFlight.increment()
            group.addTask { [self] in
                let started = ContinuousClock.now
                let outcomes = await self.sender.send(message)
                self.metrics.attemptSeconds.observe(ContinuousClock.now - started)
                self.metrics.inFlight.decrement()
                self.state.withLock { state in
                    state.inFlight -= 1
                    let left = (state.perEndpoint[message.endpointId] ?? 1) - 1
                    state.perEndpoint[message.endpointId] = left > 0 ? left : nil
                    state.finished += outcomes
                }
            }
        }
        return claimed.count == limit || formed.more
    }

    /// Records the outcomes of the sends that finished since the last flush.
    private func flush() async throws {
        let outcomes = state.withLock { state in
            defer { state.finished.removeAll(keepingCapacity: true) }
            return state.finished
        }
        guard !outcomes.isEmpty else { return }
        do {
            try await WebhookDeliveryStore.record(on: postgres, outcomes)
        } catch {
            state.withLock { $0.finished = outcomes + $0.finished }
            throw error
        }
        for outcome in outcomes {
            switch outcome.kind {
            case .delivered: metrics.delivered.increment()
            case .retrying: metrics.retrying.increment()
            case .failed: metrics.failed.increment()
            case .lost: metrics.lost.increment()
            }
        }
    }

    /// Sleeps `duration` in steps of at most 20 ms, ending early once `shutdown()` was called or
    /// a send finished (its outcome is recorded on the next turn).
    private func pause(_ duration: Duration) async {
        let clock = ContinuousClock()
        let end = clock.now + duration
        while !stopped.isFulfilled, clock.now < end {
            if state.withLock({ !$0.finished.isEmpty }) { return }
            try? await Task.sleep(for: min(.milliseconds(20), end - clock.now))
        }
    }
}

/// Every `sweepInterval`: disables endpoints failing for longer than `disableAfter` (with their
/// `webhook.disabled` attempt) and deletes ended messages past the retention; at start and hourly
/// it also runs a `WebhookAttemptRetention` pass: the weekly partitions of `webhook_attempts` made
/// ahead, the weeks wholly past the retention dropped (docs/data-lifecycle.md, "Retention"). On `/metrics`,
/// labelled `table="webhook_attempts"`: `bk_retention_days`, `bk_retention_oldest_seconds`,
/// `bk_retention_partitions`, `bk_retention_partitions_ahead`, `bk_retention_dropped_total`.
final class WebhookSweeper: Service {
    let name = "webhooks.sweeper"
    let postgres: PostgresClient
    let configuration: WebhooksConfiguration
    let metrics: WebhooksMetrics
    let logger: Logger
    private let loop: BackgroundLoop
    private let attempts: WebhookAttemptRetention
    private let attemptsMetrics: RetentionMetrics
    /// When the last attempts' retention pass ran: it runs at most every `attemptsRetentionInterval`
    /// (1 h), not every sweep (while the legacy partition exists, a pass reads its oldest row by a scan).
    private let lastAttemptsPass = Mutex<ContinuousClock.Instant?>(nil)
    static let attemptsRetentionInterval: Duration = .seconds(3600)

    init(
        postgres: PostgresClient, configuration: WebhooksConfiguration, metrics: WebhooksMetrics, logger: Logger,
        registry: MetricsRegistry
    ) {
        self.postgres = postgres
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        loop = BackgroundLoop(
            name: "webhooks-sweeper", interval: configuration.sweepInterval, logger: logger, metrics: registry)
        attempts = WebhookAttemptRetention(postgres: postgres, retention: configuration.retention)
        attemptsMetrics = RetentionMetrics(registry, table: "webhook_attempts", retention: configuration.retention)
    }

    func shutdown() async { loop.stop() }

    func run() async throws {
        await loop.run {
            let disabled = try await WebhookDeliveryStore.disableFailing(
                on: postgres, after: configuration.disableAfter)
            for id in disabled {
                metrics.endpointsDisabled.increment()
                logger.notice("webhooks.endpoint.disabled", metadata: ["endpoint": id.uuidString.lowercased()])
            }
            try await WebhookDeliveryStore.purge(on: postgres, retention: configuration.retention)
            let due = lastAttemptsPass.withLock { last in
                last.map { ContinuousClock.now - $0 >= Self.attemptsRetentionInterval } ?? true
            }
            if due {
                try await maintainAttempts()
                lastAttemptsPass.withLock { $0 = ContinuousClock.now }
            }
        }
    }

    /// One retention pass over `webhook_attempts` (`now`: the database's clock when nil); answers
    /// the partitions dropped.
    @discardableResult
    func maintainAttempts(now: Date? = nil) async throws -> [String] {
        let pass = try await attempts.maintain(now: now)
        guard pass.ran else { return [] }
        attemptsMetrics.observe(pass, logger: logger)
        return pass.dropped
    }
}
