import BuzzKitCore
internal import CNghttp2
import Foundation

/// The loop thread's body and everything it owns: the channels (one per `HTTP2Client`), their
/// connections, the read buffer and header scratch space. Not Sendable: it never leaves its thread.
///
/// One iteration: wait in epoll (until socket activity, a wakeup or the next deadline), handle
/// each ready connection (connect, handshake, read: nghttp2's callbacks finish requests), take
/// the inbox when woken, time out what is due, then hand queued requests to connections with free
/// streams, flush every connection with frames to write (one SSL_write of up to 64 KiB each) and
/// give the admission gates back the room of what ended.
final class EventLoopRunner {
    let core: LoopCore
    let logger: Logger
    private var channels: [UInt64: Channel] = [:]
    private var connections: [UInt64: Connection] = [:]
    private var dirtyChannels: [Channel] = []
    private var dirtyConnections: [Connection] = []
    /// Closed connections, kept until the end of the iteration (an epoll event of the same batch
    /// may still name one).
    private var closed: [Connection] = []
    let callbacks: SessionCallbacks
    let scratch = HeaderScratch()
    static let readBufferSize = 64 * 1024
    let readBuffer = UnsafeMutableRawPointer.allocate(byteCount: EventLoopRunner.readBufferSize, alignment: 16)
    /// The time of the current iteration (after epoll returned).
    private(set) var now = ContinuousClock.now

    init(core: LoopCore) {
        self.core = core
        logger = core.logger
        callbacks = SessionCallbacks()
    }

    deinit { readBuffer.deallocate() }

    func run() {
        logger.debug("http2 event loop started")
        // A write to a connection the server already closed raises SIGPIPE in the writing thread,
        // and OpenSSL writes with write(2), not send(MSG_NOSIGNAL). Blocked on this thread (and
        // only here: no process-wide handler), the write fails with EPIPE and the connection
        // ends as broken instead of the process.
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipe, nil)
        var events = [epoll_event](repeating: epoll_event(), count: 128)
        while true {
            let timeout = nextTimeoutMilliseconds()
            let ready = events.withUnsafeMutableBufferPointer {
                epoll_wait(core.epollFD, $0.baseAddress, Int32($0.count), timeout)
            }
            now = ContinuousClock.now
            var woken = false
            if ready > 0 {
                for index in 0..<Int(ready) {
                    let id = events[index].data.u64
                    if id == 0 {
                        woken = true
                    } else if let connection = connections[id] {
                        connection.handle(events: events[index].events)
                    }
                }
            }
            if woken, !takeInbox() { break }
            expireDeadlines()
            dispatchAndFlush()
            for channel in channels.values { channel.releaseRoom() }
            closed.removeAll()
        }
        stop()
    }

    // MARK: - Registration (called by channels and connections)

    func register(_ connection: Connection) { connections[connection.id] = connection }

    func unregister(_ connection: Connection) {
        connections[connection.id] = nil
        closed.append(connection)
    }

    func markDirty(_ connection: Connection) {
        guard !connection.isDirty else { return }
        connection.isDirty = true
        dirtyConnections.append(connection)
    }

    func markDirty(_ channel: Channel) {
        guard !channel.isDirty else { return }
        channel.isDirty = true
        dirtyChannels.append(channel)
    }

    /// Sets what epoll reports for the connection's socket (0 removes it).
    func setInterest(_ connection: Connection, _ events: UInt32) {
        guard connection.fd >= 0, connection.interest != events else { return }
        var event = epoll_event()
        event.events = events
        event.data.u64 = connection.id
        let op = events == 0 ? EPOLL_CTL_DEL : (connection.interest == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD)
        epoll_ctl(core.epollFD, op, connection.fd, &event)
        connection.interest = events
    }

    // MARK: - Iteration steps

    /// Takes and runs the inbox's commands; false when the loop is to stop.
    private func takeInbox() -> Bool {
        var counter: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &counter) { Glibc.read(core.wakeFD, $0.baseAddress, 8) }
        let (commands, stopping) = core.inbox.withLock { inbox -> ([LoopCommand], Bool) in
            defer { inbox.commands.removeAll(keepingCapacity: true) }
            return (inbox.commands, inbox.stopRequested)
        }
        for command in commands { run(command) }
        return !stopping
    }

    private func run(_ command: LoopCommand) {
        switch command {
        case .open(let spec):
            channels[spec.id] = Channel(spec: spec, loop: self)
        case .submit(let id, let requests, let gate, let reply):
            guard let channel = channels[id] else {
                // Closed already: answer as shut down, and give the room back.
                gate.release(requests.count)
                reply.resume(
                    returning: HTTP2Client.failed(requests.count, HTTP2Error(.shutdown, "the client was shut down")))
                return
            }
            channel.admit(requests, reply: reply)
        case .close(let id, let reply):
            if let channel = channels.removeValue(forKey: id) {
                channel.close()
                channel.releaseRoom()  // wakes callers still waiting for room: they fail at once
            }
            reply?.resume()
        case .resolved(let id, let result):
            connections[id]?.resolved(result)
        }
    }

    private func expireDeadlines() {
        for channel in channels.values { channel.expire(now: now) }
    }

    private func dispatchAndFlush() {
        while !dirtyChannels.isEmpty {
            let channels = dirtyChannels
            dirtyChannels.removeAll(keepingCapacity: true)
            for channel in channels { channel.dispatch() }
        }
        let connections = dirtyConnections
        dirtyConnections.removeAll(keepingCapacity: true)
        for connection in connections {
            connection.isDirty = false
            connection.flush()
        }
    }

    /// Milliseconds until the earliest deadline (a request's or a connect's), at most 1 s; -1
    /// would wait forever, which no deadline allows.
    private func nextTimeoutMilliseconds() -> Int32 {
        var earliest: ContinuousClock.Instant?
        for channel in channels.values {
            if let deadline = channel.nextDeadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        guard let earliest else { return 1000 }
        let wait = earliest - ContinuousClock.now
        if wait <= .zero { return 0 }
        let (seconds, attoseconds) = wait.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1
        return Int32(min(milliseconds, 1000))
    }

    /// Fails everything with `.shutdown`, closes every connection and descriptor, wakes waiters.
    private func stop() {
        let remaining = core.inbox.withLock { inbox -> [LoopCommand] in
            defer { inbox.commands.removeAll() }
            return inbox.commands
        }
        for command in remaining {
            switch command {
            case .submit(_, let requests, let gate, let reply):
                gate.release(requests.count)
                reply.resume(
                    returning: HTTP2Client.failed(requests.count, HTTP2Error(.shutdown, "the client was shut down")))
            case .close(_, let reply):
                reply?.resume()
            case .open, .resolved:
                break
            }
        }
        for channel in channels.values { channel.close() }
        for channel in channels.values { channel.releaseRoom() }
        channels.removeAll()
        closed.removeAll()
        Glibc.close(core.epollFD)
        Glibc.close(core.wakeFD)
        let waiters = core.inbox.withLock { inbox -> [CheckedContinuation<Void, Never>] in
            inbox.stopped = true
            defer { inbox.stopWaiters.removeAll() }
            return inbox.stopWaiters
        }
        logger.debug("http2 event loop stopped")
        for waiter in waiters { waiter.resume() }
    }
}
