internal import CMicroHTTPD
import BuzzKitCore
import BuzzKitWire
import Dispatch
import Foundation
import Synchronization

/// An HTTP/1.1 server over libmicrohttpd, answering through a `Router`.
///
/// libmicrohttpd's own threads (`Configuration.workerThreads`, epoll) read requests and write
/// responses; the Swift cooperative pool never blocks on a socket. Async handlers run as tasks
/// while their connection is suspended in MHD (suspend/resume), so a slow handler holds no network
/// thread; synchronous routes without middleware are answered on the network thread directly, and
/// `answering:` routes decide there whether to answer now, run a task, or answer later through a
/// `Responder` (no task per request: hot routes hand requests to batches this way).
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
    /// The MHD daemon pointer. `@unchecked Sendable`: MHD daemon functions used here (quiesce,
    /// info, stop) are safe from any thread; `stop` is called exactly once, by `shutdown()`.
    private struct Daemon: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private enum State {
        case idle
        case running(Daemon, port: Int)
        case stopping
        case stopped
    }

    public let configuration: Configuration
    private let core: ServerCore
    private let state = Mutex<State>(.idle)

    /// - Parameter observer: called after each response (on a network thread or a handler task;
    ///   keep it quick) with method, route pattern, status and duration, e.g. for Prometheus.
    public init(configuration: Configuration = Configuration(), router: Router, logger: Logger,
                observer: (@Sendable (RequestLog) -> Void)? = nil) {
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
        guard (0...65535).contains(c.port) else { throw HTTPServerError(.invalidConfiguration, "port \(c.port) is out of range") }
        guard c.workerThreads >= 1 else { throw HTTPServerError(.invalidConfiguration, "workerThreads must be at least 1") }
        guard c.maxBodyBytes >= 0 else { throw HTTPServerError(.invalidConfiguration, "maxBodyBytes must not be negative") }
        let timeout = c.connectionIdleTimeout.components
        let timeoutSeconds = max(1, timeout.seconds + (timeout.attoseconds > 0 ? 1 : 0))

        let claimed = state.withLock { state -> Bool in
            guard case .idle = state else { return false }
            state = .stopping  // claimed by this call; becomes .running or .idle below
            return true
        }
        guard claimed else { throw HTTPServerError(.invalidState, "the server was already started") }

        let context = Unmanaged.passRetained(core).toOpaque()
        let daemon = bk_mhd_start(UInt16(c.port), c.host, bkAccessHandler, context, bkRequestCompleted, context,
                                  UInt32(c.workerThreads), UInt32(clamping: timeoutSeconds))
        guard let daemon else {
            Unmanaged<ServerCore>.fromOpaque(context).release()
            state.withLock { $0 = .idle }
            if !Self.isIPv4(c.host) {
                throw HTTPServerError(.invalidConfiguration, "host \(c.host) is not an IPv4 address")
            }
            throw HTTPServerError(.startFailed, "cannot listen on \(c.host):\(c.port) (port in use?)")
        }
        let port = Int(bk_mhd_bind_port(daemon))
        state.withLock { $0 = .running(Daemon(pointer: daemon), port: port) }
        core.logger.info("http server listening", metadata: ["http.host": c.host, "http.port": String(port)])
    }

    /// Graceful stop: stop accepting connections, wait for in-flight requests (up to
    /// `shutdownGracePeriod`; those still running then are answered `503 not_ready`), then stop
    /// libmicrohttpd and close the listening socket. Responses sent meanwhile carry
    /// `Connection: close`. Calling it again, or before `start()`, does nothing.
    public func shutdown() async {
        let daemon = state.withLock { state -> Daemon? in
            guard case .running(let daemon, _) = state else { return nil }
            state = .stopping
            return daemon
        }
        guard let daemon else { return }
        core.draining.store(true, ordering: .relaxed)
        let listenSocket = MHD_quiesce_daemon(daemon.pointer)

        let clock = ContinuousClock()
        if await !waitForInFlight(until: clock.now + configuration.shutdownGracePeriod) {
            core.logger.warning("http server grace period over; answering remaining requests",
                                metadata: ["http.in_flight": String(core.active.load(ordering: .relaxed))])
            core.forceCompleteSuspended(with: .error(APIError(.notReady, "the server is shutting down")))
            _ = await waitForInFlight(until: clock.now + .seconds(2))
        } else {
            core.forceCompleteSuspended(with: .error(APIError(.notReady, "the server is shutting down")))
        }

        // MHD_stop_daemon joins MHD's threads: keep that off the cooperative pool.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                MHD_stop_daemon(daemon.pointer)
                bk_mhd_close_socket(listenSocket)
                continuation.resume()
            }
            thread.name = "bk-http-stop"
            thread.start()
        }
        Unmanaged<ServerCore>.passUnretained(core).release()  // the reference start() handed to MHD
        state.withLock { $0 = .stopped }
        core.logger.info("http server stopped")
    }

    /// Starts (unless already running), serves until the calling task is cancelled, then shuts
    /// down gracefully.
    public func run() async throws {
        if port == 0 { try start() }
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
        await shutdown()
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

    private static func isIPv4(_ host: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }
}
