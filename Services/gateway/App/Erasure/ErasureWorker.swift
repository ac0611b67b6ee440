import BuzzKitCore
import BuzzKitWire
import Foundation

/// Finishes the erasures their request handed over (issue 30): every `interval`, the running
/// erasures older than the request budget, oldest first, each advanced until done, blocked or its
/// slice of time is over. The `erasures` record drives it, so an erasure left by a replica that
/// stopped (or crashed) part-way is finished by whichever replica looks next; two replicas never
/// work on one at once (each batch locks the record, SKIP LOCKED here).
public final class ErasureWorker: Service {
    public let name = "erasures"
    let eraser: Eraser
    let logger: Logger
    private let loop: BackgroundLoop

    init(eraser: Eraser, logger: Logger, metrics: MetricsRegistry) {
        self.eraser = eraser
        self.logger = logger
        loop = BackgroundLoop(
            name: "erasures", interval: eraser.settings.interval,
            failureBackoff: eraser.settings.interval...(eraser.settings.interval * 30), logger: logger,
            metrics: metrics)
    }

    public func run() async throws {
        await loop.run { try await pass() }
    }

    public func shutdown() async { loop.stop() }

    /// One look: each running erasure gets up to 5 s (or the loop is stopped).
    func pass() async throws {
        for id in try await eraser.running(limit: 20) {
            if loop.isStopped { return }
            let progress = try await eraser.advance(id, until: .now + .seconds(5), wait: false)
            if progress == .completed {
                logger.info("erasure.finished_in_background", metadata: ["erasure": id.lowercasedText])
            }
        }
    }
}
