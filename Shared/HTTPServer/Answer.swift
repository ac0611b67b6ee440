import Synchronization

/// How a network-thread (`Router.on(_:_:answering:)`) handler answers a request.
///
/// Answering on the network thread costs nothing extra; a task costs a hop to the cooperative pool
/// and back (a thread wake-up, a context switch and an allocation per request). `deferred` lets
/// a handler queue the request somewhere that answers many requests with one piece of work (a
/// batched statement) and call the `Responder` when it is done, with no task per request.
public enum Answer: Sendable {
    /// The response, sent at once from the network thread.
    case now(Response)
    /// Run this async handler as a task (the connection waits, holding no thread).
    case task(Router.Handler)
    /// The connection is suspended, then `start` is called on the network thread with the
    /// `Responder` to answer through, exactly once, from any thread. `start` must not block.
    /// A responder that is never called leaves the request waiting until the handler deadline
    /// (when configured) or shutdown answers it.
    case deferred(@Sendable (Responder) -> Void)

    /// The same answer as an async call (middleware, tests).
    func response(for request: Request) async throws -> Response {
        switch self {
        case .now(let response):
            return response
        case .task(let handler):
            return try await handler(request)
        case .deferred(let start):
            return await withCheckedContinuation { continuation in
                start(Responder(continuation: continuation))
            }
        }
    }
}

/// Where a deferred answer goes. `Sendable`: call `respond` from any thread; the first response
/// wins (a deadline or shutdown may have answered already), later ones are ignored.
public struct Responder: Sendable {
    private enum Target: Sendable {
        case connection(RequestState, ServerCore)
        case continuation(Once)
    }

    /// A continuation resumed at most once.
    final class Once: Sendable {
        private let continuation: Mutex<CheckedContinuation<Response, Never>?>
        init(_ continuation: CheckedContinuation<Response, Never>) { self.continuation = Mutex(continuation) }
        func resume(_ response: Response) {
            continuation.withLock { pending in
                pending?.resume(returning: response)
                pending = nil
            }
        }
    }

    private let target: Target

    init(state: RequestState, core: ServerCore) { target = .connection(state, core) }

    init(continuation: CheckedContinuation<Response, Never>) { target = .continuation(Once(continuation)) }

    /// Sends `response` (once; later calls do nothing).
    public func respond(_ response: Response) {
        switch target {
        case .connection(let state, let core): state.complete(with: response, core: core)
        case .continuation(let once): once.resume(response)
        }
    }
}
