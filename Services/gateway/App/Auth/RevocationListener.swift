import BuzzKitCore
import BuzzKitPostgres
import Foundation

/// Keeps every replica's auth cache honest: listens on a Postgres channel (default
/// `bk_api_key_revoked`) and evicts the key id each notification names, with the installations
/// that key registered. The replica that revokes
/// a key evicts it locally at once and then notifies the others.
///
/// NOTIFY is not durable: a notification sent while this replica's listening connection is down
/// is lost, so the cache TTL (default 60 s) bounds how long a revoked key can live on then.
public final class RevocationListener: Service {
    public let name = "api-key-revocations"
    let postgres: PostgresClient
    let channel: String
    let cache: AuthCache
    let installations: InstallationCache
    let logger: Logger
    /// Listens again 1 s after the connection failed.
    private let loop: BackgroundLoop
    /// Fulfilled once `LISTEN` is in place (tests wait on it).
    let listening = OneShot<Void>()

    init(
        postgres: PostgresClient, channel: String, cache: AuthCache, installations: InstallationCache, logger: Logger,
        metrics: MetricsRegistry
    ) {
        self.postgres = postgres
        self.channel = channel
        self.cache = cache
        self.installations = installations
        self.logger = logger
        loop = BackgroundLoop(name: "api-key-revocations", interval: .seconds(1), logger: logger, metrics: metrics)
    }

    /// One body listens until the connection fails (logged by the loop, listened again 1 s later)
    /// or the service stops.
    public func run() async throws {
        await loop.runPaced({
            let notifications = try await postgres.listen(channel)
            listening.fulfill(())
            _ = try await loop.untilStopped { [cache, installations, logger] in
                for try await notification in notifications {
                    if let id = UUID(uuidString: notification.payload) {
                        cache.evict(keyID: id)
                        installations.evict(apiKeyID: id)
                    } else {
                        logger.debug("api_key.revocation.bad_payload")
                    }
                }
            }
            return .immediately
        })
    }

    public func shutdown() async { loop.stop() }

    /// Tells every replica (this one included) to forget the key.
    func announce(_ keyID: UUID) async {
        do {
            try await postgres.notify(channel, payload: keyID.uuidString)
        } catch {
            logger.warning("api_key.revocation.notify_failed", metadata: ["error": "\(error)"])
        }
    }
}
