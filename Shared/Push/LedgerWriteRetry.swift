import BuzzKitCore

/// The ledger write after a push has gone out must not be lost to a Postgres blip (APNs already
/// has the push): both senders write it through this, up to 5 tries, 0.2 s to 3.2 s apart.
public func retryingLedgerWrite(logger: Logger, _ body: () async throws -> Void) async throws {
    var delay = Duration.milliseconds(200)
    for attempt in 1...5 {
        do {
            try await body()
            return
        } catch {
            if attempt == 5 { throw error }
            logger.warning("ledger write failed, retrying", metadata: ["error": "\(error)"])
            try? await Task.sleep(for: delay)
            delay *= 2
        }
    }
}
