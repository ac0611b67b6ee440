import BuzzKitCore

/// A ledger write after a push has gone out must not be lost to a Postgres blip (APNs already has
/// the push): the record statements run through this, up to 5 tries, 0.2 s to 3.2 s apart. Safe
/// to repeat: a chunk already recorded is not recorded twice (see `Ledger.record`).
func retryingLedgerWrite<T>(logger: Logger, _ body: () async throws -> T) async throws -> T {
    var delay = Duration.milliseconds(200)
    var attempt = 1
    while true {
        do {
            return try await body()
        } catch {
            if attempt == 5 { throw error }
            logger.warning("ledger write failed, retrying", metadata: ["error": "\(error)"])
            try? await Task.sleep(for: delay)
            delay *= 2
            attempt += 1
        }
    }
}
