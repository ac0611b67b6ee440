import Synchronization

/// A fixed-capacity pool of reusable connections, with first-come first-served waiters.
///
/// Generic and knows nothing of Postgres or Redis (both clients build on it): connections are made
/// lazily by `makeConnection` (which must be cheap; connecting happens on first use) up to
/// `capacity`, lent by `lease()` and given back with `release(_:)`. State lives in a `Mutex`;
/// continuations resume after unlocking. A waiting `lease()` honours task cancellation: the
/// cancelled waiter leaves the queue at once (throwing `CancellationError`), and the connection it
/// would have had goes to the next waiter.
public final class ConnectionPool<Connection: AnyObject & Sendable>: Sendable {
    private struct Waiter {
        var id: Int
        /// Resumes an awaiting `lease()` or calls a `lease(_:)` handler.
        var deliver: @Sendable (Result<Connection, any Error>) -> Void
    }

    private struct State {
        var idle: [Connection] = []
        var created = 0
        var waiters: [Waiter] = []
        var cancelled: Set<Int> = []
        var nextWaiterID = 0
        var closed = false
    }

    public let capacity: Int
    private let state = Mutex(State())
    private let makeConnection: @Sendable (Int) -> Connection
    private let closedError: @Sendable () -> any Error

    public init(
        capacity: Int, closedError: @escaping @Sendable () -> any Error,
        makeConnection: @escaping @Sendable (Int) -> Connection
    ) {
        self.capacity = max(1, capacity)
        self.closedError = closedError
        self.makeConnection = makeConnection
    }

    private enum Step {
        case ready(Connection)
        case make(Int)
        case wait(Int)
        case closed
    }

    /// An idle connection, a new one while under capacity, or a place in the queue.
    private func step(_ state: inout State) -> Step {
        if state.closed { return .closed }
        if let connection = state.idle.popLast() { return .ready(connection) }
        if state.created < capacity {
            state.created += 1
            return .make(state.created)
        }
        state.nextWaiterID += 1
        return .wait(state.nextWaiterID)
    }

    public func lease() async throws -> Connection {
        switch state.withLock({ step(&$0) }) {
        case .ready(let connection): return connection
        case .make(let number): return makeConnection(number)
        case .closed: throw closedError()
        case .wait(let id):
            defer { _ = state.withLock { $0.cancelled.remove(id) } }
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation {
                    (continuation: CheckedContinuation<Connection, any Error>) in
                    let immediate = state.withLock { state -> Result<Connection, any Error>? in
                        if state.closed { return .failure(closedError()) }
                        if state.cancelled.contains(id) { return .failure(CancellationError()) }
                        if let connection = state.idle.popLast() { return .success(connection) }
                        state.waiters.append(Waiter(id: id) { continuation.resume(with: $0) })
                        return nil
                    }
                    if let immediate { continuation.resume(with: immediate) }
                }
            } onCancel: {
                let waiter = state.withLock { state -> Waiter? in
                    if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                        return state.waiters.remove(at: index)
                    }
                    state.cancelled.insert(id)
                    return nil
                }
                waiter?.deliver(.failure(CancellationError()))
            }
        }
    }

    /// The same for a caller without a task: `handler` gets the connection at once (on this
    /// thread) or, when all are lent, on the thread that gives one back. Not cancellable.
    public func lease(_ handler: @escaping @Sendable (Result<Connection, any Error>) -> Void) {
        let next = state.withLock { state -> Step in
            let next = step(&state)
            if case .wait(let id) = next { state.waiters.append(Waiter(id: id, deliver: handler)) }
            return next
        }
        switch next {
        case .ready(let connection): handler(.success(connection))
        case .make(let number): handler(.success(makeConnection(number)))
        case .closed: handler(.failure(closedError()))
        case .wait: break
        }
    }

    /// Gives a connection back; returns true when the pool is closed and the caller must close it.
    public func release(_ connection: Connection) -> Bool {
        let (waiter, mustClose) = state.withLock { state -> (Waiter?, Bool) in
            if state.closed { return (nil, true) }
            if !state.waiters.isEmpty { return (state.waiters.removeFirst(), false) }
            state.idle.append(connection)
            return (nil, false)
        }
        waiter?.deliver(.success(connection))
        return mustClose
    }

    /// Closes the pool: waiters fail, later leases fail; returns the idle connections to close.
    /// Connections still lent out are closed by their `release`.
    public func close() -> [Connection] {
        let (idle, waiters) = state.withLock { state -> ([Connection], [Waiter]) in
            state.closed = true
            defer {
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.deliver(.failure(closedError())) }
        return idle
    }

    /// Connections made so far / idle now / tasks waiting, for metrics and tests.
    public var statistics: (created: Int, idle: Int, waiting: Int) {
        state.withLock { ($0.created, $0.idle.count, $0.waiters.count) }
    }
}
