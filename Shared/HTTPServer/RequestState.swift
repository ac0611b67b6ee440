internal import CMicroHTTPD
import Synchronization

/// Per-request state, kept in libmicrohttpd's `*con_cls` from the first access-handler call until
/// the NOTIFY_COMPLETED callback releases it (that callback also runs for aborted requests).
///
/// `@unchecked Sendable`: the plain `var`s are touched only by the MHD thread servicing this
/// connection (MHD never services one connection on two threads at once, and a suspended
/// connection is not serviced at all, so the handler task never races them). What the handler
/// task, the deadline timer and `shutdown()` share is behind `outcome`'s Mutex.
final class RequestState: @unchecked Sendable {
    enum Outcome {
        case pending(timer: Task<Void, Never>?)
        case ready(Response)
        case taken
    }

    /// The MHD connection; valid until NOTIFY_COMPLETED, and a suspended connection cannot complete.
    let connection: OpaquePointer
    let started: ContinuousClock.Instant

    // MARK: MHD thread only
    var body: [UInt8] = []
    var tooLarge = false
    var suspended = false
    var method = ""
    var routePattern = RequestLog.unmatchedRoute
    var requestId = ""

    // MARK: ServerCore.registry's lock only
    var registered = false
    var registryNext: RequestState?
    unowned(unsafe) var registryPrevious: RequestState?

    // MARK: Shared
    let outcome = Mutex<Outcome>(.pending(timer: nil))

    init(connection: OpaquePointer) {
        self.connection = connection
        self.started = .now
    }

    /// Hands the response over and resumes the connection, once: the first caller (handler,
    /// deadline or shutdown) wins and later calls do nothing. Returns whether this call won.
    @discardableResult
    func complete(with response: Response, core: ServerCore) -> Bool {
        let (won, timer) = outcome.withLock { outcome -> (Bool, Task<Void, Never>?) in
            guard case .pending(let timer) = outcome else { return (false, nil) }
            outcome = .ready(response)
            return (true, timer)
        }
        guard won else { return false }
        timer?.cancel()
        core.unregisterSuspended(self)
        MHD_resume_connection(connection)
        return true
    }

    /// Attaches the deadline timer so completing the request cancels it.
    func attachTimer(_ timer: Task<Void, Never>) {
        let attached = outcome.withLock { outcome -> Bool in
            guard case .pending = outcome else { return false }
            outcome = .pending(timer: timer)
            return true
        }
        if !attached { timer.cancel() }
    }

    /// The response stored by `complete`, taken once after the connection was resumed.
    func takeResponse() -> Response? {
        outcome.withLock { outcome in
            guard case .ready(let response) = outcome else { return nil }
            outcome = .taken
            return response
        }
    }
}
