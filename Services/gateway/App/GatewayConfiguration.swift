import BuzzKitContracts
import BuzzKitCore
import Foundation

/// The gateway's own settings (the ones every service shares are in `ServiceSettings`).
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `BUZZKIT_SECRET_KEY` | required | base64 of 32 bytes: the AES-256-GCM key sealing tenants' .p8 keys |
/// | `BUZZKIT_RATE_LIMIT_RPS` | `1000` | requests per second per API key (sustained) |
/// | `BUZZKIT_RATE_LIMIT_BURST` | `2000` | requests per API key at once after idling |
/// | `BUZZKIT_RATE_LIMIT_ENABLED` | `true` | `false` turns rate limiting off |
/// | `BUZZKIT_AUTH_CACHE_TTL` | `60s` | how long a key stays cached (revocation evicts at once) |
/// | `BUZZKIT_KEY_LAST_USED_INTERVAL` | `10s` | how often `lastUsedAt` is written, in one batch |
/// | `BUZZKIT_DASHBOARD_DIR` | the bundled files | a folder to serve at `/dashboard` instead (edit the pages without a rebuild) |
/// | `BUZZKIT_LA_DEADLINE` | `5s` | how long `POST /v1/live-activities/send` waits for its answer (then 504 `upstream_timeout`; the send completes) |
/// | `BUZZKIT_ERASURE_REQUEST_BUDGET` | `2s` | how long `DELETE /v1/subscribers/{id}` erases before it answers `202` with the erasure to poll (the rest is finished in the background) |
/// | `BUZZKIT_ERASURE_BATCH_SIZE` | `1000` | rows per erasure batch (events, receipts, runs; a tenth as many messages per ledger page) |
/// | `BUZZKIT_ERASURE_INTERVAL` | `1s` | how often the erasure loop looks for erasures to finish |
/// | `BUZZKIT_ERASURE_RUN_CANCEL_WAIT` | `30s` | how long an erased person's running workflow runs have to end once asked to cancel before they are deleted anyway |
/// | `BUZZKIT_WEBHOOKS_ALLOW_PRIVATE` | `false` | `true` lets webhook endpoints use `http://` and resolve to loopback, private and link-local addresses (the webhooks service must have the same setting) |
public struct GatewayConfiguration: Sendable {
    /// The AES-256-GCM key for secrets at rest (32 bytes).
    public var secretKey: [UInt8]
    public var rateLimit: RateLimitConfiguration
    public var authCacheTTL: Duration
    public var lastUsedInterval: Duration
    /// The Postgres channel that carries key revocations to every replica. Default
    /// `bk_api_key_revoked` (tests use their own).
    public var revocationChannel: String
    /// Where accepted event batches go (`bk:ingest`; tests use their own stream).
    public var ingestStream: StreamName = .ingest
    /// The folder served at `/dashboard`; nil: the files bundled with the gateway.
    public var dashboardDirectory: String?
    /// Where Live Activity sends go (`bk:la`; tests use their own stream). Answers come back on
    /// `<stream>:reply:<uuid>`, one list per gateway replica (`LiveActivityReplies`).
    public var liveActivityStream: StreamName = .liveActivities
    /// How long `POST /v1/live-activities/send` waits for the liveactivity service. Default 5 s.
    public var liveActivityDeadline: Duration = .seconds(5)
    /// Webhook endpoints may lead to loopback, private and link-local addresses and use `http://`
    /// (`BUZZKIT_WEBHOOKS_ALLOW_PRIVATE`). Default false.
    public var webhooksAllowPrivate = false
    /// Subscriber erasure (the four erasure variables above).
    public var erasure = ErasureSettings()

    public init(
        secretKey: [UInt8], rateLimit: RateLimitConfiguration = RateLimitConfiguration(),
        authCacheTTL: Duration = .seconds(60), lastUsedInterval: Duration = .seconds(10),
        revocationChannel: String = "bk_api_key_revoked"
    ) {
        self.secretKey = secretKey
        self.rateLimit = rateLimit
        self.authCacheTTL = authCacheTTL
        self.lastUsedInterval = lastUsedInterval
        self.revocationChannel = revocationChannel
    }

    /// Reads the table above; every problem is reported at once.
    public init(environment: [String: String]) throws(ConfigurationError) {
        var reader = ConfigReader(environment: environment)
        var key: [UInt8] = []
        if let raw = reader.raw("BUZZKIT_SECRET_KEY"), !raw.isEmpty {
            if let data = Data(base64Encoded: raw.trimmingCharacters(in: .whitespacesAndNewlines)), data.count == 32 {
                key = Array(data)
            } else {
                reader.reject("BUZZKIT_SECRET_KEY", "must be the base64 of exactly 32 bytes (openssl rand -base64 32)")
            }
        } else {
            reader.reject("BUZZKIT_SECRET_KEY", "is required: the base64 of 32 random bytes (openssl rand -base64 32)")
        }
        let rps = reader.int("BUZZKIT_RATE_LIMIT_RPS", default: 1000, range: 1...1_000_000)
        let burst = reader.int("BUZZKIT_RATE_LIMIT_BURST", default: 2000, range: 1...10_000_000)
        let enabled = reader.bool("BUZZKIT_RATE_LIMIT_ENABLED", default: true)
        let ttl = reader.duration("BUZZKIT_AUTH_CACHE_TTL", default: .seconds(60))
        let interval = reader.duration("BUZZKIT_KEY_LAST_USED_INTERVAL", default: .seconds(10))
        let dashboard = reader.raw("BUZZKIT_DASHBOARD_DIR").flatMap { $0.isEmpty ? nil : $0 }
        let deadline = reader.duration("BUZZKIT_LA_DEADLINE", default: .seconds(5))
        let allowPrivate = reader.bool("BUZZKIT_WEBHOOKS_ALLOW_PRIVATE", default: false)
        var erasure = ErasureSettings()
        erasure.requestBudget = reader.duration("BUZZKIT_ERASURE_REQUEST_BUDGET", default: erasure.requestBudget)
        erasure.batchSize = reader.int("BUZZKIT_ERASURE_BATCH_SIZE", default: erasure.batchSize, range: 1...100_000)
        erasure.interval = reader.duration("BUZZKIT_ERASURE_INTERVAL", default: erasure.interval)
        erasure.runCancelWait = reader.duration("BUZZKIT_ERASURE_RUN_CANCEL_WAIT", default: erasure.runCancelWait)
        if let dashboard, !FileManager.default.fileExists(atPath: dashboard + "/index.html") {
            reader.reject("BUZZKIT_DASHBOARD_DIR", "must be a folder with an index.html")
        }
        try reader.validate()
        self.init(
            secretKey: key,
            rateLimit: RateLimitConfiguration(requestsPerSecond: Double(rps), burst: burst, enabled: enabled),
            authCacheTTL: ttl, lastUsedInterval: interval)
        dashboardDirectory = dashboard
        liveActivityDeadline = deadline
        webhooksAllowPrivate = allowPrivate
        self.erasure = erasure
    }
}
