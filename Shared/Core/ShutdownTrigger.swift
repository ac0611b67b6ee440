import Synchronization

/// A one-shot event: the first `fire` wakes every present and future `wait`.
final class ShutdownTrigger: Sendable {
    private struct State {
        var reason: String?
        var waiters: [CheckedContinuation<String, Never>] = []
    }

    private let state = Mutex(State())

    func fire(reason: String) {
        let waiters: [CheckedContinuation<String, Never>] = state.withLock { state in
            guard state.reason == nil else { return [] }
            state.reason = reason
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: reason) }
    }

    func wait() async -> String {
        await withCheckedContinuation { continuation in
            let fired: String? = state.withLock { state in
                if let reason = state.reason { return reason }
                state.waiters.append(continuation)
                return nil
            }
            if let fired { continuation.resume(returning: fired) }
        }
    }
}
