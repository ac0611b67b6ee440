import Synchronization

/// Backpressure: at most `limit` requests admitted and not yet answered per client. A caller
/// over the limit waits (suspended, first come first served) until answers free room, so a slow
/// or stalled server makes senders wait instead of growing a queue without bound.
///
/// `acquire` takes room for a whole batch at once (at most `limit`); the event loop releases it
/// as requests end, once per loop iteration. Not tied to any thread.
final class AdmissionGate: Sendable {
    let limit: Int
    private struct State {
        var available: Int
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var waiterHead = 0
        /// Most requests ever admitted and unanswered at once.
        var highWater = 0
    }
    private let state: Mutex<State>
    private let statistics: HTTP2ClientStatistics

    init(limit: Int, statistics: HTTP2ClientStatistics) {
        self.limit = max(1, limit)
        self.statistics = statistics
        state = Mutex(State(available: max(1, limit)))
    }

    /// Waits until `count` (1...limit) more requests may be admitted, then counts them in.
    func acquire(_ count: Int) async {
        let count = min(max(count, 0), limit)
        guard count > 0 else { return }
        let admitted = state.withLock { state -> Bool in
            guard state.waiterHead == state.waiters.count, state.available >= count else { return false }
            state.available -= count
            state.highWater = max(state.highWater, limit - state.available)
            return true
        }
        if admitted {
            note()
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                // Room may have been freed between the two locks.
                if state.waiterHead == state.waiters.count, state.available >= count {
                    state.available -= count
                    state.highWater = max(state.highWater, limit - state.available)
                    return true
                }
                state.waiters.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
        note()
    }

    private func note() {
        HTTP2ClientStatistics.raise(statistics.mostOutstanding, to: state.withLock { $0.highWater })
    }

    /// `count` admitted requests ended: wakes the waiters that now fit, in order.
    func release(_ count: Int) {
        guard count > 0 else { return }
        var woken: [CheckedContinuation<Void, Never>] = []
        state.withLock { state in
            state.available = min(limit, state.available + count)
            while state.waiterHead < state.waiters.count, state.waiters[state.waiterHead].count <= state.available {
                let waiter = state.waiters[state.waiterHead]
                state.available -= waiter.count
                state.highWater = max(state.highWater, limit - state.available)
                woken.append(waiter.continuation)
                state.waiterHead += 1
            }
            if state.waiterHead == state.waiters.count {
                state.waiters.removeAll(keepingCapacity: true)
                state.waiterHead = 0
            }
        }
        for continuation in woken { continuation.resume() }
    }

    /// Requests admitted and not yet answered now.
    var outstanding: Int { state.withLock { limit - $0.available } }
    var highWater: Int { state.withLock { $0.highWater } }
    /// Callers waiting for room now.
    var waiting: Int { state.withLock { $0.waiters.count - $0.waiterHead } }
}
