import Synchronization

/// How a finished transfer reports back: the continuation of one `execute(_:)` call, or one slot
/// of an `execute(batch:)` call. Used on the engine thread (and by `submit` when it refuses a
/// request after shutdown); each transfer finishes exactly once.
enum CurlCompletion: Sendable {
    case single(CheckedContinuation<HTTPClientResponse, any Error>)
    case batch(CurlBatch, index: Int)

    func finish(_ result: Result<HTTPClientResponse, any Error>) {
        switch self {
        case .single(let continuation):
            continuation.resume(with: result)
        case .batch(let batch, let index):
            batch.finish(
                index,
                result.mapError { error in
                    error as? HTTPClientError ?? HTTPClientError(code: .cancelled, message: "the request was cancelled")
                })
        }
    }
}

/// The results of one `execute(batch:)` call, in request order. Its single continuation is
/// resumed when the last transfer of the batch finished: one suspension for the whole batch
/// instead of one task and one continuation per request (at thousands of pushes per second, that
/// bookkeeping was a visible share of the sender's CPU).
final class CurlBatch: Sendable {
    private struct State {
        var results: [HTTPClientBatchResult?]
        var remaining: Int
    }

    private let state: Mutex<State>
    private let continuation: CheckedContinuation<[HTTPClientBatchResult], Never>

    init(count: Int, continuation: CheckedContinuation<[HTTPClientBatchResult], Never>) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count))
        self.continuation = continuation
    }

    func finish(_ index: Int, _ result: Result<HTTPClientResponse, HTTPClientError>) {
        let now = ContinuousClock.now
        let done = state.withLock { state -> [HTTPClientBatchResult]? in
            guard state.results[index] == nil else { return nil }  // finished twice: ignore
            state.results[index] = HTTPClientBatchResult(result: result, finishedAt: now)
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            return state.results.map {
                $0 ?? HTTPClientBatchResult(result: .failure(HTTPClientError.shutdown()), finishedAt: now)
            }
        }
        if let done { continuation.resume(returning: done) }
    }
}

/// One request's end in `HTTPClient.execute(batch:)`: its response or why none came, and when.
public struct HTTPClientBatchResult: Sendable {
    public var result: Result<HTTPClientResponse, HTTPClientError>
    /// When the client saw the request end (for per-request latency inside a batch).
    public var finishedAt: ContinuousClock.Instant

    public init(result: Result<HTTPClientResponse, HTTPClientError>, finishedAt: ContinuousClock.Instant) {
        self.result = result
        self.finishedAt = finishedAt
    }
}
