import BuzzKitAPNs
import BuzzKitCore
import BuzzKitPush
import Foundation

/// The liveactivity service's own settings (the ones every service shares are in
/// `ServiceSettings`). The APNs ones are the apns-sender's variables, read the same way.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `BUZZKIT_SECRET_KEY` | required | base64 of 32 bytes: opens the tenants' sealed .p8 keys (the gateway's) |
/// | `BUZZKIT_APNS_SANDBOX_URL` / `BUZZKIT_APNS_PRODUCTION_URL` | Apple's hosts | where pushes go |
/// | `BUZZKIT_APNS_CA_FILE` | none (system store) | CA to trust instead (the simulator's `ca.pem`) |
/// | `BUZZKIT_APNS_REQUEST_TIMEOUT` | `10s` | limit for one APNs attempt |
/// | `BUZZKIT_APNS_TCP_NODELAY` | `true` | TCP_NODELAY on APNs connections |
/// | `BUZZKIT_APNS_MAX_ATTEMPTS` / `BUZZKIT_APNS_RETRY_BASE` | `5` / `500ms` | retries of 429, 5xx, timeouts |
/// | `BUZZKIT_CREDENTIALS_TTL` | `60s` | how long a tenant's APNs credentials stay cached |
/// | `BUZZKIT_LA_LANES` | `4` | batches in flight per replica (consumers of `bk:la` in the process) |
/// | `BUZZKIT_LA_BATCH_SIZE` | `64` | most requests one lane takes at once (one statement decides them, one records them) |
/// | `BUZZKIT_LA_CLAIM_IDLE` / `BUZZKIT_LA_RECLAIM_INTERVAL` | `15s` / `5s` | when a dead replica's requests are taken over |
public struct LiveActivityConfiguration: Sendable {
    public var secretKey: [UInt8]
    public var clients: APNsClientPool.Settings
    public var retryPolicy: RetryPolicy
    public var credentialsTTL: Duration
    /// Batches in flight per replica: each lane is a consumer of its own (`<instance>/<n>`) that
    /// reads, decides, sends, records and answers one batch at a time. An idle lane blocked in
    /// its read takes a request the moment it arrives (lanes do not read ahead); under load the
    /// batches grow up to `batchSize`, so the cost per request falls as the rate rises.
    public var lanes: Int
    /// Most requests a lane takes in one read.
    public var batchSize: Int
    public var claimIdle: Duration
    public var reclaimInterval: Duration

    public init(
        secretKey: [UInt8], clients: APNsClientPool.Settings = .init(), retryPolicy: RetryPolicy = .default,
        credentialsTTL: Duration = .seconds(60), lanes: Int = 4, batchSize: Int = 64,
        claimIdle: Duration = .seconds(15),
        reclaimInterval: Duration = .seconds(5)
    ) {
        self.secretKey = secretKey
        self.clients = clients
        self.retryPolicy = retryPolicy
        self.credentialsTTL = credentialsTTL
        self.lanes = lanes
        self.batchSize = batchSize
        self.claimIdle = claimIdle
        self.reclaimInterval = reclaimInterval
    }

    /// Reads the table above; every problem is reported at once.
    public init(environment: [String: String]) throws(ConfigurationError) {
        var reader = ConfigReader(environment: environment)
        let key = reader.sealedKeySecret()
        let clients = reader.apnsClientSettings()
        let retryPolicy = reader.apnsRetryPolicy()
        let ttl = reader.duration("BUZZKIT_CREDENTIALS_TTL", default: .seconds(60))
        let lanes = reader.int("BUZZKIT_LA_LANES", default: 4, range: 1...64)
        let batchSize = reader.int("BUZZKIT_LA_BATCH_SIZE", default: 64, range: 1...1000)
        let claimIdle = reader.duration("BUZZKIT_LA_CLAIM_IDLE", default: .seconds(15))
        let reclaim = reader.duration("BUZZKIT_LA_RECLAIM_INTERVAL", default: .seconds(5))
        try reader.validate()
        self.init(
            secretKey: key,
            clients: clients, retryPolicy: retryPolicy, credentialsTTL: ttl,
            lanes: lanes, batchSize: batchSize, claimIdle: claimIdle, reclaimInterval: reclaim)
    }
}
