import BuzzKitCore
import BuzzKitWebhooks
import Foundation

/// The webhooks service's settings (the ones every service shares are in `ServiceSettings`).
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `BUZZKIT_SECRET_KEY` | required | the gateway's key, which sealed the endpoints' signing secrets |
/// | `BUZZKIT_WEBHOOKS_ALLOW_PRIVATE` | `false` | `true` lets endpoints reach loopback, private and link-local addresses and use `http://` (the local stack's demo receiver); cloud metadata addresses stay refused |
/// | `BUZZKIT_WEBHOOKS_TIMEOUT` | `15s` | limit for one attempt (connect, send, answer) |
/// | `BUZZKIT_WEBHOOKS_RETRY_SCHEDULE` | `0s,5s,5m,30m,2h,5h,10h,10h` | the wait before each attempt; after the last fails the message is `failed` |
/// | `BUZZKIT_WEBHOOKS_DISABLE_AFTER` | `120h` (5 days) | an endpoint whose every attempt failed for this long is disabled |
/// | `BUZZKIT_WEBHOOKS_CONCURRENCY` | `64` | attempts in flight per replica |
/// | `BUZZKIT_WEBHOOKS_ENDPOINT_CONCURRENCY` | `16` | attempts in flight per replica to one endpoint (a slow endpoint cannot take every slot) |
/// | `BUZZKIT_WEBHOOKS_CLAIM_BATCH` | `100` | messages claimed per statement |
/// | `BUZZKIT_WEBHOOKS_FORM_BATCH` | `5000` | outbox rows made into messages per statement (and rows only within this many times 300 bytes of stored data) |
/// | `BUZZKIT_WEBHOOKS_POLL_INTERVAL` | `100ms` | how long a replica that found nothing to do waits before looking again |
/// | `BUZZKIT_WEBHOOKS_LEASE` | `60s` | a claimed message not recorded within this (its replica died) is sent again by another, same `webhook-id`; more than the timeout |
/// | `BUZZKIT_WEBHOOKS_SWEEP_INTERVAL` | `60s` | how often failing endpoints are disabled and old rows dropped |
/// | `BUZZKIT_WEBHOOKS_RETENTION` | `720h` (30 days) | ended messages older than this are deleted (replay reaches this far back); attempts go by whole weeks once wholly older |
/// | `BUZZKIT_WEBHOOKS_CA_FILE` | system store | CA certificates to trust for `https://` endpoints instead (tests) |
public struct WebhooksConfiguration: Sendable {
    public var secretKey: [UInt8]
    public var consumerName: String
    public var allowPrivate = false
    public var timeout: Duration = .seconds(15)
    public var schedule = WebhookRetrySchedule.standard
    public var disableAfter: Duration = .seconds(5 * 86400)
    public var concurrency = 64
    public var endpointConcurrency = 16
    public var claimBatch = 100
    public var formBatch = 5000
    public var pollInterval: Duration = .milliseconds(100)
    public var lease: Duration = .seconds(60)
    public var sweepInterval: Duration = .seconds(60)
    public var retention: Duration = .seconds(30 * 86400)
    public var caFile: String?

    public init(secretKey: [UInt8], consumerName: String) {
        self.secretKey = secretKey
        self.consumerName = consumerName
    }

    /// Reads the table above; every problem is reported at once.
    public init(consumerName: String, environment: [String: String]) throws(ConfigurationError) {
        var reader = ConfigReader(environment: environment)
        var key: [UInt8] = []
        if let raw = reader.raw("BUZZKIT_SECRET_KEY"),
            let data = Data(base64Encoded: raw.trimmingCharacters(in: .whitespacesAndNewlines)), data.count == 32
        {
            key = Array(data)
        } else {
            reader.reject("BUZZKIT_SECRET_KEY", "is required: the gateway's key, the base64 of 32 bytes")
        }
        self.init(secretKey: key, consumerName: consumerName)
        allowPrivate = reader.bool("BUZZKIT_WEBHOOKS_ALLOW_PRIVATE", default: false)
        timeout = reader.duration("BUZZKIT_WEBHOOKS_TIMEOUT", default: timeout)
        if let text = reader.raw("BUZZKIT_WEBHOOKS_RETRY_SCHEDULE") {
            if let parsed = WebhookRetrySchedule(text: text) {
                schedule = parsed
            } else {
                reader.reject(
                    "BUZZKIT_WEBHOOKS_RETRY_SCHEDULE", "must be durations separated by commas (0s,5s,5m,30m,2h)")
            }
        }
        disableAfter = reader.duration("BUZZKIT_WEBHOOKS_DISABLE_AFTER", default: disableAfter)
        concurrency = reader.int("BUZZKIT_WEBHOOKS_CONCURRENCY", default: concurrency, range: 1...10_000)
        endpointConcurrency = reader.int(
            "BUZZKIT_WEBHOOKS_ENDPOINT_CONCURRENCY", default: endpointConcurrency, range: 1...10_000)
        claimBatch = reader.int("BUZZKIT_WEBHOOKS_CLAIM_BATCH", default: claimBatch, range: 1...10_000)
        formBatch = reader.int("BUZZKIT_WEBHOOKS_FORM_BATCH", default: formBatch, range: 1...1_000_000)
        pollInterval = reader.duration("BUZZKIT_WEBHOOKS_POLL_INTERVAL", default: pollInterval)
        lease = reader.duration("BUZZKIT_WEBHOOKS_LEASE", default: lease)
        sweepInterval = reader.duration("BUZZKIT_WEBHOOKS_SWEEP_INTERVAL", default: sweepInterval)
        retention = reader.duration("BUZZKIT_WEBHOOKS_RETENTION", default: retention)
        caFile = reader.raw("BUZZKIT_WEBHOOKS_CA_FILE")
        if lease <= timeout + .seconds(1) {
            reader.reject("BUZZKIT_WEBHOOKS_LEASE", "must be longer than BUZZKIT_WEBHOOKS_TIMEOUT by more than 1s")
        }
        if let caFile, !FileManager.default.fileExists(atPath: caFile) {
            reader.reject("BUZZKIT_WEBHOOKS_CA_FILE", "\(caFile) does not exist")
        }
        try reader.validate()
    }
}
