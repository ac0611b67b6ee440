import Synchronization

/// Turns concurrent single requests into batches: every `submit` waits while at most
/// `maxConcurrent` batches run; whatever queued up meanwhile goes into the next batch (at most
/// `maxBatch` items). No timer: an idle coalescer runs a lone request at once, a busy one makes
/// batches as large as the load (so one statement and one commit serve many requests).
///
/// With `distinctKeys`, a key is in at most one batch at a time, and once (an upsert may touch a
/// row only once per statement, and two concurrent batches locking the same rows in different
/// orders could deadlock); later items of a key wait for a later batch, in arrival order.
/// `run` answers one result per input, in order, so every caller gets its own value or error.
///
/// `run` is either async (a task drains the queue) or answers through a callback: then the first
/// batch starts on the submitting thread and each next one on the thread that answered the last
/// (a database connection's), so a request that answers through a callback never touches the
/// Swift pool.
final class Coalescer<Key: Hashable & Sendable, Input: Sendable, Output: Sendable>: Sendable {
    typealias Run = @Sendable ([Input]) async -> [Result<Output, any Error>]
    typealias Results = [Result<Output, any Error>]
    /// Must call its second argument exactly once, on any thread, and never block the caller.
    typealias RunWithCallback = @Sendable ([Input], @escaping @Sendable (Results) -> Void) -> Void

    private enum Runner: Sendable {
        case async(Run)
        case callback(RunWithCallback)
    }

    typealias Completion = @Sendable (Result<Output, any Error>) -> Void

    private struct Pending {
        var key: Key
        var input: Input
        var completion: Completion
    }

    private struct State {
        var queue: [Pending] = []
        var running = 0
        /// With `distinctKeys`: the keys of the batches running now (a key is in one batch at a time).
        var inFlight = Set<Key>()
    }

    let maxBatch: Int
    let maxConcurrent: Int
    let distinctKeys: Bool
    private let runner: Runner
    private let observeBatch: @Sendable (Int) -> Void
    private let state = Mutex(State())

    /// - Parameters:
    ///   - maxBatch: the largest batch (default 256).
    ///   - maxConcurrent: batches in flight at once (default 2; keep it below the database pool size).
    ///   - observeBatch: told each batch's size (metrics).
    convenience init(
        maxBatch: Int = 256, maxConcurrent: Int = 2, distinctKeys: Bool = false,
        observeBatch: @escaping @Sendable (Int) -> Void = { _ in }, run: @escaping Run
    ) {
        self.init(
            maxBatch: maxBatch, maxConcurrent: maxConcurrent, distinctKeys: distinctKeys,
            observeBatch: observeBatch, runner: .async(run))
    }

    /// A coalescer whose batches answer through a callback (see the type's comment).
    convenience init(
        maxBatch: Int = 256, maxConcurrent: Int = 2, distinctKeys: Bool = false,
        observeBatch: @escaping @Sendable (Int) -> Void = { _ in }, runWithCallback: @escaping RunWithCallback
    ) {
        self.init(
            maxBatch: maxBatch, maxConcurrent: maxConcurrent, distinctKeys: distinctKeys,
            observeBatch: observeBatch, runner: .callback(runWithCallback))
    }

    private init(
        maxBatch: Int, maxConcurrent: Int, distinctKeys: Bool,
        observeBatch: @escaping @Sendable (Int) -> Void, runner: Runner
    ) {
        self.maxBatch = max(1, maxBatch)
        self.maxConcurrent = max(1, maxConcurrent)
        self.distinctKeys = distinctKeys
        self.observeBatch = observeBatch
        self.runner = runner
    }

    func submit(key: Key, _ input: Input) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            submit(key: key, input) { continuation.resume(with: $0) }
        }
    }

    /// Queues `input`; `completion` gets its result, once, on the task or thread that ran its
    /// batch. No task per request: callers that answer through a callback (a deferred HTTP
    /// answer) skip the hop.
    func submit(key: Key, _ input: Input, completion: @escaping Completion) {
        let lead = state.withLock { state -> Bool in
            state.queue.append(Pending(key: key, input: input, completion: completion))
            guard state.running < maxConcurrent else { return false }
            state.running += 1
            return true
        }
        guard lead else { return }
        switch runner {
        case .async(let run): Task { await self.drain(run) }
        case .callback(let run): runNext(run, after: [])
        }
    }

    /// Runs batches until the queue is empty.
    private func drain(_ run: Run) async {
        var finished: [Pending] = []
        while true {
            let batch = nextBatch(after: finished)
            if batch.isEmpty { return }
            observeBatch(batch.count)
            Self.deliver(await run(batch.map(\.input)), to: batch)
            finished = batch
        }
    }

    /// Starts the next batch, if any; its callback delivers the results and starts the one after.
    private func runNext(_ run: @escaping RunWithCallback, after finished: [Pending]) {
        let batch = nextBatch(after: finished)
        if batch.isEmpty { return }
        observeBatch(batch.count)
        run(batch.map(\.input)) { [self] results in
            Self.deliver(results, to: batch)
            runNext(run, after: batch)
        }
    }

    /// Frees the finished batch's keys and takes the next batch; none left ends this runner.
    private func nextBatch(after finished: [Pending]) -> [Pending] {
        state.withLock { state -> [Pending] in
            if distinctKeys { for pending in finished { state.inFlight.remove(pending.key) } }
            let batch = take(&state)
            if batch.isEmpty { state.running -= 1 }
            return batch
        }
    }

    private static func deliver(_ results: Results, to batch: [Pending]) {
        for (index, pending) in batch.enumerated() {
            pending.completion(index < results.count ? results[index] : .failure(CoalescerError.missingResult))
        }
    }

    private func take(_ state: inout State) -> [Pending] {
        guard !state.queue.isEmpty else { return [] }
        guard distinctKeys else {
            let count = min(maxBatch, state.queue.count)
            defer { state.queue.removeFirst(count) }
            return Array(state.queue.prefix(count))
        }
        var batch: [Pending] = []
        var rest: [Pending] = []
        for pending in state.queue {
            if batch.count < maxBatch, !state.inFlight.contains(pending.key) {
                state.inFlight.insert(pending.key)
                batch.append(pending)
            } else {
                rest.append(pending)
            }
        }
        state.queue = rest
        return batch
    }
}

enum CoalescerError: Error {
    /// `run` answered fewer results than it got inputs (a bug).
    case missingResult
}
