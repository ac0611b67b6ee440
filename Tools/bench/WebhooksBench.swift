import BuzzKitCore
import BuzzKitPostgres
import BuzzKitWebhooks
import Foundation

/// The webhooks service's side of bench/webhooks.sh:
///
/// - `buzzkit-bench webhooks endpoint --postgres URL --tenant T --url U [--events delivery.sent,...]`:
///   creates an endpoint (sealed with `BUZZKIT_SECRET_KEY`) and prints its id.
/// - `buzzkit-bench webhooks produce --postgres URL --tenant T --events N [--batch 100] [--connections 4]
///   [--seam on|off]`: a stand-in for the ledger's write: statements that each insert `batch`
///   rows into `bench_webhook_producer` and, with `--seam on`, enqueue their `delivery.sent`
///   events through `WebhookOutbox.insertBatchesSQL` in the same statement, the way the ledger's
///   record does (one outbox row per endpoint and 100 events). Prints the elapsed time; the
///   script reads the processes' CPU around it.
enum WebhooksBench {
    static func run(arguments: [String]) async throws -> [String] {
        guard let command = arguments.first else { throw WebhooksBenchUsage() }
        var options: [String: String] = [:]
        var index = 1
        while index + 1 < arguments.count {
            options[String(arguments[index].drop { $0 == "-" })] = arguments[index + 1]
            index += 2
        }
        guard let url = options["postgres"], let tenantText = options["tenant"],
            let tenant = UUID(uuidString: tenantText)
        else { throw WebhooksBenchUsage() }
        var configuration = try PostgresConfiguration(url: url)
        configuration.poolSize = Int(options["connections"] ?? "4") ?? 4
        let postgres = PostgresClient(configuration: configuration, logger: .silent())
        switch command {
        case "endpoint":
            guard let raw = ProcessInfo.processInfo.environment["BUZZKIT_SECRET_KEY"],
                let key = Data(base64Encoded: raw), let target = options["url"]
            else { throw WebhooksBenchUsage() }
            let events = (options["events"] ?? "delivery.sent").split(separator: ",").compactMap {
                WebhookEventType(rawValue: String($0))
            }
            let store = try WebhookEndpointStore(postgres: postgres, secretKey: Array(key))
            let created = try await store.create(
                tenantId: tenant, url: target, events: events, description: "bench", enabled: true)
            await postgres.shutdown()
            return [created.record.id.uuidString.lowercased()]
        case "produce":
            let total = Int(options["events"] ?? "100000") ?? 100_000
            let batch = Int(options["batch"] ?? "100") ?? 100
            let seam = options["seam"] == "on"
            let connections = configuration.poolSize
            try await postgres.execute(
                """
                CREATE TABLE IF NOT EXISTS bench_webhook_producer (
                    id uuid PRIMARY KEY, tenant_id uuid NOT NULL, message_id uuid NOT NULL, device_token text NOT NULL,
                    subscriber_id text NOT NULL, environment text NOT NULL, sent_at timestamptz NOT NULL)
                """)
            let sql = produceSQL(seam: seam)
            let message = UUID()
            // The backends of the pool's connections (the same machine): their CPU, read from /proc
            // before and after, is Postgres's cost of the statements (a backend's time is lost to
            // outside readers once its connection closes).
            let backends = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<connections {
                    group.addTask {
                        try await postgres.query("SELECT pg_backend_pid(), pg_sleep(0.2)")[0].decode(Int.self, at: 0)
                    }
                }
                return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
            }
            let ticksBefore = backends.map(Self.ticks).reduce(0, +)
            let clock = ContinuousClock()
            let started = clock.now
            let statements = (total + batch - 1) / batch
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<connections {
                    group.addTask {
                        var n = worker
                        while n < statements {
                            let count = min(batch, total - n * batch)
                            let ids = (0..<count).map { _ in UUID() }
                            let tokens = (0..<count).map { i in String(format: "%064x", n * batch + i) }
                            let subscribers = (0..<count).map { i in "u\(n * batch + i)" }
                            _ = try await postgres.query(sql, [tenant, ids, message, tokens, subscribers])
                            n += connections
                        }
                    }
                }
                try await group.waitForAll()
            }
            let elapsed = clock.now - started
            let ticks = backends.map(Self.ticks).reduce(0, +) - ticksBefore
            await postgres.shutdown()
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return [
                "events=\(total) batch=\(batch) seam=\(seam ? "on" : "off") connections=\(connections)",
                String(format: "elapsed_s=%.3f rate=%.0f", seconds, Double(total) / seconds),
                "backends=\(backends.count) backend_ticks=\(ticks)"
            ]
        default:
            throw WebhooksBenchUsage()
        }
    }

    /// CPU ticks (user + system) a process has used, from /proc (0 when it is gone).
    static func ticks(_ pid: Int) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based, counting pid and comm).
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return user + system
    }

    /// One producer statement: `batch` rows, and with the seam their `delivery.sent` events.
    static func produceSQL(seam: Bool) -> String {
        let events = WebhookOutbox.insertBatchesSQL(
            WebhookBatchSource(
                from: "p", tenantId: "p.tenant_id", type: WebhookEventSource.literal(.deliverySent),
                eventId: "p.id", occurredAt: "p.sent_at",
                item: WebhookEventData.deliverySent(
                    deliveryId: "p.id", messageId: "p.message_id", subscriberId: "p.subscriber_id",
                    deviceToken: "p.device_token", environment: "p.environment")))
        return """
            WITH p AS (
                INSERT INTO bench_webhook_producer (id, tenant_id, message_id, device_token, subscriber_id, environment, sent_at)
                SELECT u.id, $1::uuid, $3::uuid, u.token, u.subscriber, 'sandbox', now()
                FROM unnest($2::uuid[], $4::text[], $5::text[]) AS u(id, token, subscriber)
                RETURNING id, tenant_id, message_id, device_token, subscriber_id, environment, sent_at
            )\(seam ? ", webhook_events AS (\(events))" : "")
            SELECT count(*) FROM p
            """
    }
}

struct WebhooksBenchUsage: Error, CustomStringConvertible {
    var description: String {
        "usage: buzzkit-bench webhooks endpoint|produce --postgres URL --tenant UUID [--url U --events a,b | --events N --batch B --connections C --seam on|off]"
    }
}
