import Foundation
import Synchronization

/// A dedicated OS thread that runs submitted jobs one at a time, in order.
///
/// Blocking C calls (libpq statements, hiredis reads that BLOCK for seconds, connects) must never
/// run on Swift's cooperative pool (two threads on the target machines): each PostgreSQL and Redis
/// connection owns one of these and touches its C handle only from it, so the handle needs no
/// lock. `stop()` lets the queued jobs finish, then the thread exits.
///
/// `WorkerThread.isCurrent` tells code whether it runs on one of these threads: a job of such a
/// thread resumes its caller as its last step, outside any lock, so an executor may run the
/// resumed task right there instead of waking another thread (the liveactivity lanes do).
public final class WorkerThread: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var stopped = false
    }

    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - name: the thread's name in `top -H` and profiles (at most 15 bytes reach the kernel).
    ///   - stackSize: bytes; nil keeps the platform's default (8 MiB on Linux).
    public init(name: String, stackSize: Int? = nil) {
        NamedThread.start(name, stackSize: stackSize) { [self] in loop() }
    }

    /// Queues `job`; returns false (and drops it) when the thread was stopped.
    @discardableResult
    public func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { signal.signal() }
        return accepted
    }

    /// Runs `body` on the thread and returns its result to the awaiting task; throws
    /// `stoppedError()` when the thread was stopped (the body never runs then).
    public func run<T: Sendable>(
        orThrow stoppedError: @escaping @Sendable () -> any Error, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let accepted = submit {
                do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
            }
            if !accepted { continuation.resume(throwing: stoppedError()) }
        }
    }

    /// Finishes the queued jobs, then ends the thread. Later `submit`s are refused.
    public func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first { signal.signal() }
    }

    /// Whether the calling thread is a `WorkerThread`'s.
    public static var isCurrent: Bool { pthread_getspecific(workerThreadKey) != nil }

    private func loop() {
        pthread_setspecific(workerThreadKey, UnsafeRawPointer(bitPattern: 1))
        while true {
            signal.wait()
            let next = state.withLock { state -> (job: (@Sendable () -> Void)?, exit: Bool) in
                if state.head < state.jobs.count {
                    let job = state.jobs[state.head]
                    state.head += 1
                    if state.head > 64, state.head * 2 > state.jobs.count {
                        state.jobs.removeFirst(state.head)
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

/// Set (non-nil) on every `WorkerThread`'s thread.
private let workerThreadKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()
