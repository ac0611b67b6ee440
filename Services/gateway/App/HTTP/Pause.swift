import BuzzKitCore

/// Sleeping that a shutdown signal interrupts, for background loops.
enum Pause {
    /// Sleeps `duration` in slices of at most 100 ms, returning early once `stop` is fulfilled.
    static func sleep(_ duration: Duration, unless stop: OneShot<Void>) async {
        let deadline = ContinuousClock.now + duration
        while !stop.isFulfilled {
            let left = deadline - ContinuousClock.now
            if left <= .zero { return }
            try? await Task.sleep(for: min(left, .milliseconds(100)))
        }
    }
}
