import BuzzKitAPNs
import BuzzKitCore
import Foundation

/// The settings every process that pushes reads the same way (apns-sender and liveactivity), so
/// one variable means one thing in both and a change of default is made once.
extension ConfigReader {
    /// `BUZZKIT_SECRET_KEY`: the base64 of the 32 bytes that open tenants' sealed .p8 keys (the
    /// gateway's key). Missing or malformed is a configuration error, reported with the others.
    public mutating func sealedKeySecret() -> [UInt8] {
        if let raw = raw("BUZZKIT_SECRET_KEY"), !raw.isEmpty,
            let data = Data(base64Encoded: raw.trimmingCharacters(in: .whitespacesAndNewlines)), data.count == 32
        {
            return Array(data)
        }
        reject("BUZZKIT_SECRET_KEY", "is required: the base64 of 32 bytes, the same as the gateway's")
        return []
    }

    /// `BUZZKIT_APNS_SANDBOX_URL`, `BUZZKIT_APNS_PRODUCTION_URL`, `BUZZKIT_APNS_CA_FILE`,
    /// `BUZZKIT_APNS_REQUEST_TIMEOUT` (10 s), `BUZZKIT_APNS_TCP_NODELAY` (true),
    /// `BUZZKIT_APNS_MAX_CONNECTIONS` (2 per team and environment, 1–64): the client pool's.
    public mutating func apnsClientSettings() -> APNsClientPool.Settings {
        let sandbox = string("BUZZKIT_APNS_SANDBOX_URL", default: APNsEnvironment.sandbox.defaultBaseURL)
        let production = string("BUZZKIT_APNS_PRODUCTION_URL", default: APNsEnvironment.production.defaultBaseURL)
        let ca = raw("BUZZKIT_APNS_CA_FILE").flatMap { $0.isEmpty ? nil : $0 }
        let timeout = duration("BUZZKIT_APNS_REQUEST_TIMEOUT", default: .seconds(10))
        let noDelay = bool("BUZZKIT_APNS_TCP_NODELAY", default: true)
        let connections = int("BUZZKIT_APNS_MAX_CONNECTIONS", default: 2, range: 1...64)
        var settings = APNsClientPool.Settings(
            sandboxURL: sandbox, productionURL: production, caFile: ca,
            requestTimeout: timeout, tcpNoDelay: noDelay)
        settings.maxConnections = connections
        return settings
    }

    /// `BUZZKIT_APNS_MAX_ATTEMPTS` (5, 1–20) and `BUZZKIT_APNS_RETRY_BASE` (500 ms).
    public mutating func apnsRetryPolicy() -> RetryPolicy {
        let attempts = int("BUZZKIT_APNS_MAX_ATTEMPTS", default: 5, range: 1...20)
        let base = duration("BUZZKIT_APNS_RETRY_BASE", default: .milliseconds(500))
        return RetryPolicy(maxAttempts: attempts, baseDelay: base)
    }
}
