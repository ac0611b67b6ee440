import BuzzKitCore
import Foundation
import Synchronization

/// A dedicated OS thread that runs submitted jobs one at a time, in order.
///
/// hiredis calls block (connect, read, BLOCK reads for seconds): they must never run on Swift's
/// cooperative pool (2 threads on the target machines). Each `RedisConnection` owns one of these,
/// so its `redisContext` is only ever touched from this thread.
final class RedisThread: Sendable {
    private struct Jobs {
        var queue: [@Sendable () -> Void] = []
        var head = 0
        var stopped = false
    }

    private let jobs = Mutex(Jobs())
    private let wake = DispatchSemaphore(value: 0)

    init(name: String) {
        NamedThread.start(name) { [self] in loop() }
    }

    /// Queues `job`; false when the thread was stopped (the job will never run).
    @discardableResult
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = jobs.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.queue.append(job)
            return true
        }
        if accepted { wake.signal() }
        return accepted
    }

    /// Lets the thread finish the queued jobs and exit. Jobs submitted afterwards are refused.
    func stop() {
        let first = jobs.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first { wake.signal() }
    }

    private func loop() {
        while true {
            wake.wait()
            let next = jobs.withLock { state -> (job: (@Sendable () -> Void)?, exit: Bool) in
                if state.head < state.queue.count {
                    let job = state.queue[state.head]
                    state.head += 1
                    if state.head > 64 && state.head * 2 > state.queue.count {
                        state.queue.removeFirst(state.head)
                        state.head = 0
                    }
                    return (job, false)
                }
                return (nil, state.stopped)
            }
            if let job = next.job { job() } else if next.exit { return }
        }
    }
}
