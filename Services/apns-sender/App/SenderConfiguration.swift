import BuzzKitAPNs
import BuzzKitCore
import BuzzKitPush
import Foundation

/// apns-sender's own settings (the ones every service shares are in `ServiceSettings`).
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `BUZZKIT_SECRET_KEY` | required | base64 of 32 bytes: opens the tenants' sealed .p8 keys |
/// | `BUZZKIT_APNS_SANDBOX_URL` | `https://api.sandbox.push.apple.com` | APNs host for sandbox tokens |
/// | `BUZZKIT_APNS_PRODUCTION_URL` | `https://api.push.apple.com` | APNs host for production tokens |
/// | `BUZZKIT_APNS_CA_FILE` | none (system store) | CA to trust instead (the simulator's `ca.pem`) |
/// | `BUZZKIT_APNS_REQUEST_TIMEOUT` | `10s` | limit for one APNs attempt |
/// | `BUZZKIT_APNS_TCP_NODELAY` | `true` | TCP_NODELAY on APNs connections (`false`: the kernel coalesces small frames) |
/// | `BUZZKIT_APNS_MAX_CONNECTIONS` | `2` | connections per team and environment (another opens only while the open ones are full) |
/// | `BUZZKIT_APNS_MAX_ATTEMPTS` | `5` | attempts per delivery (429, 5xx, timeouts, broken connections retry) |
/// | `BUZZKIT_APNS_RETRY_BASE` | `500ms` | first backoff; doubles, jittered, capped at 30 s |
/// | `BUZZKIT_SENDER_CONCURRENCY` | `8` | delivery chunks sent at once per replica (each up to a chunk of pushes in flight) |
/// | `BUZZKIT_SENDER_CHUNK_SIZE` | `200` | deliveries per `bk:deliveries` entry (fan-out side): one claim, one APNs batch and one record each |
/// | `BUZZKIT_FANOUT_PAGE_SIZE` | `4000` | devices per fan-out page (one INSERT, one pipelined XADD, one cursor write) |
/// | `BUZZKIT_FANOUT_CONCURRENCY` | `2` | messages fanned out at once per replica (a one-subscriber message is one short fan-out) |
/// | `BUZZKIT_DIRECT_BATCH_SIZE` | `200` | direct messages (a `to` list of at most 100 subscribers) taken, sent and recorded together (one statement each way); also the entries read at once |
/// | `BUZZKIT_DIRECT_CONSUMERS` | `1` | direct batches in flight at once per replica (one makes the batches as large as the load: a statement's own cost, not its rows, is most of a small batch's) |
/// | `BUZZKIT_SENDER_CLAIM_IDLE` | `120s` | entries pending this long with a (dead) replica are taken over |
/// | `BUZZKIT_SENDER_RECLAIM_INTERVAL` | `15s` | how often to look for such entries |
/// | `BUZZKIT_SENDER_STALE_SENDING` | `120s` | a chunk claimed this long and not recorded (its replica died) is sent again by another replica (same `apns-id` and collapse id), and a Live Activity request's chunk is recorded `failed` / `sender_lost` (never sent again); longer than a chunk's slowest send (5 attempts of 10 s with backoff: about 60 s) |
/// | `BUZZKIT_OUTBOX_SWEEP_INTERVAL` | `10s` | how often the outbox sweeper runs |
/// | `BUZZKIT_OUTBOX_REQUEUE_AFTER` | `30s` | a message untouched this long in `queued`/`fanning_out` is put on `bk:messages` again; one `fanned_out` this long with nothing pending is completed (a replica stopped before its completion test) |
/// | `BUZZKIT_CREDENTIALS_TTL` | `60s` | how long a tenant's APNs credentials stay cached |
/// | `BUZZKIT_LEDGER_RETENTION_DAYS` | `90` | messages, deliveries and stored requests are kept this long (at least 7: the longest window `GET /v1/stats` reads), then dropped a week at a time |
/// | `BUZZKIT_LEDGER_RETENTION_INTERVAL` | `1h` | how often the ledger's retention pass runs (and at start) |
public struct SenderConfiguration: Sendable {
    public var secretKey: [UInt8]
    public var sandboxURL: String
    public var productionURL: String
    public var caFile: String?
    public var requestTimeout: Duration
    public var tcpNoDelay: Bool = true
    public var apnsMaxConnections = 2
    public var fanoutConcurrency: Int = 2
    public var directBatchSize: Int = 200
    public var directConsumers: Int = 1
    public var retryPolicy: RetryPolicy
    public var concurrency: Int
    public var chunkSize: Int
    public var pageSize: Int
    public var claimIdle: Duration
    public var reclaimInterval: Duration
    public var staleSending: Duration
    public var sweepInterval: Duration
    public var requeueAfter: Duration
    public var credentialsTTL: Duration
    public var ledgerRetentionDays: Int = 90
    public var ledgerRetentionInterval: Duration = .seconds(3600)

    public init(
        secretKey: [UInt8], sandboxURL: String = APNsEnvironment.sandbox.defaultBaseURL,
        productionURL: String = APNsEnvironment.production.defaultBaseURL, caFile: String? = nil,
        requestTimeout: Duration = .seconds(10), retryPolicy: RetryPolicy = .default, concurrency: Int = 8,
        chunkSize: Int = 200, pageSize: Int = 4000, claimIdle: Duration = .seconds(120),
        reclaimInterval: Duration = .seconds(15), staleSending: Duration = .seconds(120),
        sweepInterval: Duration = .seconds(10), requeueAfter: Duration = .seconds(30),
        credentialsTTL: Duration = .seconds(60)
    ) {
        self.secretKey = secretKey
        self.sandboxURL = sandboxURL
        self.productionURL = productionURL
        self.caFile = caFile
        self.requestTimeout = requestTimeout
        self.retryPolicy = retryPolicy
        self.concurrency = concurrency
        self.chunkSize = chunkSize
        self.pageSize = pageSize
        self.claimIdle = claimIdle
        self.reclaimInterval = reclaimInterval
        self.staleSending = staleSending
        self.sweepInterval = sweepInterval
        self.requeueAfter = requeueAfter
        self.credentialsTTL = credentialsTTL
    }

    /// Reads the table above; every problem is reported at once.
    public init(environment: [String: String]) throws(ConfigurationError) {
        var reader = ConfigReader(environment: environment)
        let key = reader.sealedKeySecret()
        let clients = reader.apnsClientSettings()
        let retryPolicy = reader.apnsRetryPolicy()
        let concurrency = reader.int("BUZZKIT_SENDER_CONCURRENCY", default: 8, range: 1...256)
        let chunk = reader.int("BUZZKIT_SENDER_CHUNK_SIZE", default: 200, range: 1...1000)
        let page = reader.int("BUZZKIT_FANOUT_PAGE_SIZE", default: 4000, range: 1...10_000)
        let fanoutConcurrency = reader.int("BUZZKIT_FANOUT_CONCURRENCY", default: 2, range: 1...256)
        let directBatch = reader.int("BUZZKIT_DIRECT_BATCH_SIZE", default: 200, range: 1...1000)
        let directConsumers = reader.int("BUZZKIT_DIRECT_CONSUMERS", default: 1, range: 1...64)
        let claimIdle = reader.duration("BUZZKIT_SENDER_CLAIM_IDLE", default: .seconds(120))
        let reclaim = reader.duration("BUZZKIT_SENDER_RECLAIM_INTERVAL", default: .seconds(15))
        let stale = reader.duration("BUZZKIT_SENDER_STALE_SENDING", default: .seconds(120))
        let sweep = reader.duration("BUZZKIT_OUTBOX_SWEEP_INTERVAL", default: .seconds(10))
        let requeue = reader.duration("BUZZKIT_OUTBOX_REQUEUE_AFTER", default: .seconds(30))
        let ttl = reader.duration("BUZZKIT_CREDENTIALS_TTL", default: .seconds(60))
        let ledgerRetentionDays = reader.int("BUZZKIT_LEDGER_RETENTION_DAYS", default: 90, range: 7...36_500)
        let ledgerRetentionInterval = reader.duration("BUZZKIT_LEDGER_RETENTION_INTERVAL", default: .seconds(3600))
        try reader.validate()
        self.init(
            secretKey: key, sandboxURL: clients.sandboxURL, productionURL: clients.productionURL,
            caFile: clients.caFile, requestTimeout: clients.requestTimeout, retryPolicy: retryPolicy,
            concurrency: concurrency,
            chunkSize: chunk, pageSize: page, claimIdle: claimIdle, reclaimInterval: reclaim, staleSending: stale,
            sweepInterval: sweep, requeueAfter: requeue, credentialsTTL: ttl)
        tcpNoDelay = clients.tcpNoDelay
        apnsMaxConnections = clients.maxConnections
        self.fanoutConcurrency = fanoutConcurrency
        directBatchSize = directBatch
        self.directConsumers = directConsumers
        self.ledgerRetentionDays = ledgerRetentionDays
        self.ledgerRetentionInterval = ledgerRetentionInterval
    }

    func baseURL(_ environment: APNsEnvironment) -> String {
        environment == .sandbox ? sandboxURL : productionURL
    }

    /// What the APNs client pool needs of these settings.
    var clientSettings: APNsClientPool.Settings {
        var settings = APNsClientPool.Settings(
            sandboxURL: sandboxURL, productionURL: productionURL, caFile: caFile,
            requestTimeout: requestTimeout, tcpNoDelay: tcpNoDelay)
        settings.maxConnections = apnsMaxConnections
        return settings
    }
}
