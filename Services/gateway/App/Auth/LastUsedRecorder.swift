import BuzzKitCore
import Foundation
import Synchronization

/// Collects the ids of keys that authenticated requests and writes `last_used_at` for all of them
/// in one statement every `interval` (default 10 s), instead of one write per request. On
/// shutdown it flushes once more. A failed flush keeps the ids for the next one.
public final class LastUsedRecorder: Service {
    public let name = "api-key-last-used"
    let store: KeyStore
    let interval: Duration
    let logger: Logger
    private let pending = Mutex<Set<UUID>>([])
    private let loop: BackgroundLoop

    init(store: KeyStore, interval: Duration, logger: Logger, metrics: MetricsRegistry) {
        self.store = store
        self.interval = interval
        self.logger = logger
        loop = BackgroundLoop(
            name: "api-key-last-used", interval: interval, start: .afterInterval, logger: logger, metrics: metrics)
    }

    /// Called on every authenticated request: a set insert under a lock.
    func record(_ id: UUID) {
        _ = pending.withLock { $0.insert(id) }
    }

    /// Writes what is pending now (tests and shutdown).
    public func flush() async {
        let ids = pending.withLock { set -> [UUID] in
            defer { set.removeAll(keepingCapacity: true) }
            return Array(set)
        }
        guard !ids.isEmpty else { return }
        do {
            try await store.touch(ids)
        } catch {
            logger.warning("api_key.last_used.flush_failed", metadata: ["error": "\(error)", "keys": String(ids.count)])
            pending.withLock { $0.formUnion(ids) }
        }
    }

    /// Flushes every `interval`, and once more when stopped.
    public func run() async throws {
        await loop.run { await flush() }
        await flush()
    }

    public func shutdown() async { loop.stop() }
}
