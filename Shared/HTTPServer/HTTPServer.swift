import BuzzKitCore
import BuzzKitWire
internal import CMicroHTTPD
import Dispatch
import Foundation
import Synchronization

/// An HTTP/1.1 server over libmicrohttpd, answering through a `Router`.
///
/// One libmicrohttpd daemon per network thread (`Configuration.workerThreads`, epoll) reads
/// requests and writes responses; an accept thread hands new connections to the daemons in turn,
/// so each thread serves an equal share (MHD's own thread pool lets its threads race to accept,
/// and one of two threads often took most of a client's connections). The Swift cooperative pool
/// never blocks on a socket. Async handlers run as tasks while their connection is suspended in
/// MHD (suspend/resume), so a slow handler holds no network thread; synchronous routes without
/// middleware are answered on the network thread directly, and `answering:` routes decide there
/// whether to answer now, run a task, or answer later through a `Responder` (no task per request:
/// hot routes hand requests to batches this way).
/// Keep-alive works for every response except a refusal of an oversized `Content-Length`.
///
/// Every response carries `X-Request-Id`; every JSON response is the `Envelope` with
/// `metadata.requestId`. Errors: unknown path `404 not_found`, wrong method
/// `405 method_not_allowed` (+ `Allow`), oversized body `413 payload_too_large`, a thrown `APIError`
/// its own envelope, anything else thrown `500 internal_error` (logged with the request id, never
/// shown to the client).
///
/// Lifecycle: `start()` binds (read the port from `port`), `shutdown()` stops accepting, lets
/// in-flight requests finish within `Configuration.shutdownGracePeriod`, then stops. `run()` does
/// both around the caller's task, for service groups that cancel on SIGTERM.
public final class HTTPServer: Sendable {
    /// The listening socket, the daemons (one per network thread) and the accept thread's end.
    ///
    /// `@unchecked Sendable`: the daemon pointers only reach MHD functions that are safe from any
    /// thread (`MHD_add_connection` on the accept thread, `MHD_stop_daemon` once, by `shutdown()`
    /// after the accept thread has returned); the array holding them is written before the accept
    /// thread starts and freed after it has returned and the daemons have stopped.
    private final class Network: @unchecked Sendable {
        let listenSocket: Int32
        let daemons: UnsafeMutablePointer<OpaquePointer?>
        let count: Int
        /// Signalled by the accept thread when `bk_accept_loop` returns.
        let acceptReturned = DispatchSemaphore(value: 0)

        init(listenSocket: Int32, daemons: UnsafeMutablePointer<OpaquePointer?>, count: Int) {
            self.listenSocket = listenSocket
            self.daemons = daemons
            self.count = count
        }

        /// Stops every daemon that started (joins their threads: never on the cooperative pool),
        /// closes the socket and frees the array. Call once the accept thread has returned (or
        /// never started).
        func stopDaemons() {
            for index in 0..<count { if let daemon = daemons[index] { MHD_stop_daemon(daemon) } }
            bk_close_socket(listenSocket)
            daemons.deallocate()
        }
    }

    private enum State {
        case idle
        case running(Network, port: Int)
        case stopping
        case stopped
    }

    public let configuration: Configuration
    private let core: ServerCore
    private let state = Mutex<State>(.idle)
    /// Fulfilled when a `shutdown()` has stopped the server (what `run()` waits for).
    private let stopped = OneShot<Void>()

    /// - Parameter observer: called after each response (on a network thread or a handler task;
    ///   keep it quick) with method, route pattern, status and duration, e.g. for Prometheus.
    public init(
        configuration: Configuration = Configuration(), router: Router, logger: Logger,
        observer: (@Sendable (RequestLog) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.core = ServerCore(configuration: configuration, router: router, logger: logger, observer: observer)
    }

    /// The bound TCP port (the kernel's pick when configured with port 0); 0 when not running.
    public var port: Int {
        state.withLock { state in
            if case .running(_, let port) = state { return port }
            return 0
        }
    }

    /// Requests received and not yet fully answered (including those waiting on a handler).
    public var inFlightRequests: Int { core.active.load(ordering: .relaxed) }

    /// Binds and starts serving. Throws `HTTPServerError` when the configuration is invalid, the
    /// address cannot be bound, or the server was started before.
    public func start() throws(HTTPServerError) {
        let c = configuration
        guard (0...65535).contains(c.port) else {
            throw HTTPServerError(.invalidConfiguration, "port \(c.port) is out of range")
        }
        guard c.workerThreads >= 1 else {
            throw HTTPServerError(.invalidConfiguration, "workerThreads must be at least 1")
        }
        guard c.maxBodyBytes >= 0 else {
            throw HTTPServerError(.invalidConfiguration, "maxBodyBytes must not be negative")
        }
        let timeout = c.connectionIdleTimeout.components
        let timeoutSeconds = max(1, timeout.seconds + (timeout.attoseconds > 0 ? 1 : 0))

        let claimed = state.withLock { state -> Bool in
            guard case .idle = state else { return false }
            state = .stopping  // claimed by this call; becomes .running or .idle below
            return true
        }
        guard claimed else { throw HTTPServerError(.invalidState, "the server was already started") }

        let listenSocket = bk_listen_ipv4(c.host, UInt16(c.port))
        guard listenSocket >= 0 else {
            state.withLock { $0 = .idle }
            if listenSocket == -2 {
                throw HTTPServerError(.invalidConfiguration, "host \(c.host) is not an IPv4 address")
            }
            throw HTTPServerError(.startFailed, "cannot listen on \(c.host):\(c.port) (port in use?)")
        }
        let daemons = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: c.workerThreads)
        daemons.initialize(repeating: nil, count: c.workerThreads)
        let network = Network(listenSocket: listenSocket, daemons: daemons, count: c.workerThreads)
        let context = Unmanaged.passRetained(core).toOpaque()
        for index in 0..<c.workerThreads {
            daemons[index] = bk_mhd_start(
                bkAccessHandler, context, bkRequestCompleted, context, UInt32(clamping: timeoutSeconds))
            if daemons[index] == nil {
                network.stopDaemons()
                Unmanaged<ServerCore>.fromOpaque(context).release()
                state.withLock { $0 = .idle }
                throw HTTPServerError(.startFailed, "libmicrohttpd could not start network thread \(index + 1)")
            }
        }
        NamedThread.start("bk-http-accept") {
            bk_accept_loop(network.listenSocket, network.daemons, UInt32(network.count))
            network.acceptReturned.signal()
        }
        let port = Int(bk_socket_port(listenSocket))
        state.withLock { $0 = .running(network, port: port) }
        core.logger.info("http server listening", metadata: ["http.host": c.host, "http.port": String(port)])
    }

    /// Graceful stop: stop accepting connections, wait for in-flight requests (up to
    /// `shutdownGracePeriod`; those still running then are answered `503 not_ready`), then stop
    /// libmicrohttpd and close the listening socket. Responses sent meanwhile carry
    /// `Connection: close`. Calling it again, or before `start()`, does nothing.
    public func shutdown() async {
        let network = state.withLock { state -> Network? in
            guard case .running(let network, _) = state else { return nil }
            state = .stopping
            return network
        }
        guard let network else { return }
        core.draining.store(true, ordering: .relaxed)
        bk_listen_stop(network.listenSocket)

        let clock = ContinuousClock()
        if await !waitForInFlight(until: clock.now + configuration.shutdownGracePeriod) {
            core.logger.warning(
                "http server grace period over; answering remaining requests",
                metadata: ["http.in_flight": String(core.active.load(ordering: .relaxed))])
            core.forceCompleteSuspended(with: .error(APIError(.notReady, "the server is shutting down")))
            _ = await waitForInFlight(until: clock.now + .seconds(2))
        } else {
            core.forceCompleteSuspended(with: .error(APIError(.notReady, "the server is shutting down")))
        }

        // Waiting for the accept thread and MHD_stop_daemon (which joins MHD's threads) block:
        // keep them off the cooperative pool.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            NamedThread.start("bk-http-stop") {
                network.acceptReturned.wait()
                network.stopDaemons()
                continuation.resume()
            }
        }
        Unmanaged<ServerCore>.passUnretained(core).release()  // the reference start() handed to MHD
        state.withLock { $0 = .stopped }
        core.logger.info("http server stopped")
        stopped.fulfill(())
    }

    /// Starts (unless already running) and serves until `shutdown()` has stopped the server, or
    /// until the calling task is cancelled: then it shuts down gracefully itself.
    public func run() async throws {
        if port == 0 { try start() }
        if (try? await stopped.wait()) == nil { await shutdown() }
    }

    /// Polls the in-flight count every 5 ms until it is 0 (true) or the deadline passes (false).
    /// Uses a Dispatch timer rather than `Task.sleep`, because `shutdown()` is typically called
    /// from a cancelled task (`run()`), where `Task.sleep` returns at once and would spin.
    private func waitForInFlight(until deadline: ContinuousClock.Instant) async -> Bool {
        while core.active.load(ordering: .relaxed) > 0 {
            if ContinuousClock.now >= deadline { return false }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) { continuation.resume() }
            }
        }
        return true
    }
}
