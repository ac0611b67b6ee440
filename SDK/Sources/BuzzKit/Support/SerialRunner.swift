import Synchronization

/// Runs async jobs one after another, in the order they were submitted, without a long-lived task.
///
/// Each job is a task that first awaits the previous one. `submit` returns at once (how `track`
/// returns immediately yet stays ordered); `run` awaits the job's result, so a caller that runs
/// a job knows every job submitted before it has finished.
final class SerialRunner: Sendable {
    private let last = Mutex<Task<Void, Never>?>(nil)

    func submit(_ job: @escaping @Sendable () async -> Void) {
        last.withLock { last in
            let previous = last
            last = Task {
                await previous?.value
                await job()
            }
        }
    }

    func run<T: Sendable>(_ job: @escaping @Sendable () async -> T) async -> T {
        let task: Task<T, Never> = last.withLock { last in
            let previous = last
            let task = Task<T, Never> {
                await previous?.value
                return await job()
            }
            last = Task { _ = await task.value }
            return task
        }
        return await task.value
    }

    /// Waits until every job submitted so far has finished.
    func drain() async { await run {} }
}
