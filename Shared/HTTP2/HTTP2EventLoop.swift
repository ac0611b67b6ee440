import BuzzKitCore
internal import CNghttp2
import Foundation
import Synchronization

/// One dedicated thread (never Swift's cooperative pool) running every HTTP/2 connection of the
/// clients made on it: epoll over non-blocking sockets, OpenSSL for TLS, nghttp2 for the framing.
///
/// Other threads reach it only through a locked inbox and an eventfd (written when the inbox goes
/// from empty to non-empty, so a burst of submissions costs one wakeup). Share one loop per
/// process between many `HTTP2Client`s (one per APNs team and environment): a loop thread
/// spends a few microseconds per request, and one is plenty for two cores.
///
/// Call `shutdown()` when done (after the clients' own `shutdown()`); releasing the last
/// reference also stops the thread, without waiting.
public final class HTTP2EventLoop: Sendable {
    let core: LoopCore

    /// Starts the thread. `name` (at most 15 bytes reach the kernel) shows in `top -H` and profiles.
    public init(name: String = "bk-http2", logger: Logger) throws {
        core = try LoopCore(logger: logger)
        let core = self.core
        NamedThread.start(name) { EventLoopRunner(core: core).run() }
    }

    deinit { core.requestStop() }

    /// Fails what is still queued or in flight with `.shutdown`, closes every connection, stops
    /// the thread and waits for it.
    public func shutdown() async {
        core.requestStop()
        await core.waitStopped()
    }
}

/// What crosses from callers to the loop thread.
enum LoopCommand: Sendable {
    case open(ChannelSpec)
    case submit(
        channel: UInt64, requests: [HTTP2Request], gate: AdmissionGate,
        reply: CheckedContinuation<[HTTP2Result], Never>)
    case close(channel: UInt64, reply: CheckedContinuation<Void, Never>?)
    case resolved(connection: UInt64, Result<SocketAddress, HTTP2Error>)
}

/// The loop's shared half: the inbox, the eventfd that wakes the thread, and the epoll instance.
/// The descriptors are plain integers; everything mutable is under the inbox's lock.
final class LoopCore: Sendable {
    struct Inbox {
        var commands: [LoopCommand] = []
        var stopRequested = false
        var stopped = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let epollFD: Int32
    let wakeFD: Int32
    let logger: Logger
    let inbox = Mutex(Inbox())
    private let nextID = Atomic<UInt64>(1)

    init(logger: Logger) throws {
        let epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw HTTP2Error(.shutdown, "epoll_create1 failed: errno \(errno)") }
        let wakeFD = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            Glibc.close(epollFD)
            throw HTTP2Error(.shutdown, "eventfd failed: errno \(errno)")
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = 0  // 0 marks the wakeup descriptor; connections have ids from 1
        epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event)
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        self.logger = logger
    }

    /// A process-unique id for a channel or a connection (never 0).
    func makeID() -> UInt64 { nextID.wrappingAdd(1, ordering: .relaxed).oldValue }

    /// Queues a command; false after the loop was asked to stop (the caller answers it itself).
    func post(_ command: LoopCommand) -> Bool {
        let accepted = inbox.withLock { inbox -> Bool in
            guard !inbox.stopRequested else { return false }
            let wasEmpty = inbox.commands.isEmpty
            inbox.commands.append(command)
            if wasEmpty { wake() }
            return true
        }
        return accepted
    }

    func requestStop() {
        inbox.withLock { inbox in
            guard !inbox.stopRequested else { return }
            inbox.stopRequested = true
            wake()
        }
    }

    func waitStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = inbox.withLock { inbox -> Bool in
                if inbox.stopped { return true }
                inbox.stopWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(wakeFD, $0.baseAddress, 8) }
    }
}
