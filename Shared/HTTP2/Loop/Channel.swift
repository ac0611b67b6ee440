import BuzzKitCore
internal import CNghttp2

/// One client's side of the loop: its queue of admitted requests, its connections, and the
/// rules that move a request from the queue to a stream and from a stream to its end.
///
/// - A queued request goes to the first open connection with a free stream (free: the lower of
///   our `maxConcurrentStreams` and the server's SETTINGS, minus the streams open on it). None
///   free: a new connection opens if fewer than `maxConnections` are usable and none is still
///   connecting; otherwise the request waits.
/// - A request the server provably never processed goes back to the front of the queue (at most
///   3 times): its stream above a GOAWAY's last stream id or refused (REFUSED_STREAM), or its
///   HEADERS never written before the stream or the connection ended.
/// - A request whose HEADERS were written when its connection broke or its stream was reset ends
///   `connectionBroken`: the server may have acted on it, so the caller decides (APNs: a retry
///   under the same apns-id and collapse id).
/// - A connection that fails before it was ever usable (resolve, connect, TLS, timeout) fails
///   every queued request with its error when no other connection is left to take them.
final class Channel {
    let spec: ChannelSpec
    unowned let loop: EventLoopRunner
    private(set) var connections: [Connection] = []
    private var queue = Ring<StreamContext>()
    private var outstanding = OutstandingList()
    /// Requests ended since the admission gate was last given their room back.
    private var ended = 0
    var isDirty = false
    private(set) var isClosed = false
    let literalAddress: SocketAddress?
    /// `:authority` and `:scheme` as bytes, sent with every request.
    let authority: [UInt8]

    static let maxResends = 3

    init(spec: ChannelSpec, loop: EventLoopRunner) {
        self.spec = spec
        self.loop = loop
        literalAddress = SocketAddress.literal(spec.host, port: spec.port)
        authority = Array(spec.authority.utf8)
    }

    var configuration: HTTP2Client.Configuration { spec.configuration }

    // MARK: - Admission and dispatch

    func admit(_ requests: [HTTP2Request], reply: CheckedContinuation<[HTTP2Result], Never>) {
        let sink = BatchSink(count: requests.count, reply: reply)
        let deadline = loop.now + configuration.requestTimeout
        for (index, request) in requests.enumerated() {
            let context = StreamContext(request: request, sink: sink, index: index, deadline: deadline)
            outstanding.append(context)
            queue.append(context)
        }
        HTTP2ClientStatistics.raise(spec.statistics.mostQueued, to: queue.count)
        loop.markDirty(self)
    }

    /// Hands queued requests to connections with free streams; opens a connection when needed.
    func dispatch() {
        isDirty = false
        guard !isClosed else { return }
        var index = 0
        while !queue.isEmpty {
            if queue.first!.finished {
                queue.removeFirst()
                continue
            }
            // The first connection with room, in order (filling one before the next keeps the
            // frames of many requests in one write).
            while index < connections.count, connections[index].freeStreams == 0 { index += 1 }
            guard index < connections.count else {
                openConnectionIfAllowed()
                return
            }
            let connection = connections[index]
            let context = queue.removeFirst()
            if !connection.submit(context) {
                finish(context, .failure(HTTP2Error(.invalidRequest, "nghttp2 refused the request's headers")))
            }
        }
    }

    private func openConnectionIfAllowed() {
        var usable = 0
        for connection in connections {
            if connection.isConnecting { return }  // one at a time; the queue waits for it
            if connection.isUsable { usable += 1 }
        }
        guard usable < configuration.maxConnections else { return }
        let connection = Connection(id: loop.core.makeID(), channel: self, loop: loop)
        connections.append(connection)
        loop.register(connection)
        spec.statistics.connectionsOpened.add(1, ordering: .relaxed)
        spec.logger.debug(
            "http2 connection opening",
            metadata: ["http2.host": spec.host, "http2.connection": String(connection.id)])
        if let address = literalAddress {
            connection.connect(to: address)
        } else {
            let core = loop.core
            let id = connection.id
            SocketAddress.resolve(spec.host, port: spec.port) { result in
                _ = core.post(.resolved(connection: id, result))
            }
        }
    }

    // MARK: - Ends

    /// Ends a request with its result (once): unlinks it, detaches it from its stream and
    /// answers its batch.
    func finish(_ context: StreamContext, _ result: Result<HTTP2Response, HTTP2Error>) {
        guard !context.finished else { return }
        context.finished = true
        outstanding.remove(context)
        if let connection = context.connection { connection.detach(context) }
        context.connection = nil
        ended += 1
        context.sink.complete(context.index, HTTP2Result(result: result, finishedAt: loop.now))
    }

    /// Puts a request the server never processed back at the front of the queue.
    func resend(_ context: StreamContext) {
        guard !context.finished else { return }
        if context.resends >= Self.maxResends {
            finish(
                context,
                .failure(HTTP2Error(.connectionBroken, "the server refused the request \(Self.maxResends + 1) times")))
            return
        }
        context.resends += 1
        context.resetForResend()
        spec.statistics.requestsResent.add(1, ordering: .relaxed)
        queue.prepend(context)
        loop.markDirty(self)
    }

    /// A connection ended. Its requests: never written ones back to the queue, written ones
    /// `connectionBroken` (or `error`'s code when the connection never became usable).
    func connectionClosed(_ connection: Connection, error: HTTP2Error?, wasUsable: Bool) {
        connections.removeAll { $0 === connection }
        for context in outstanding.all where context.connection === connection {
            if context.headersSent {
                finish(context, .failure(error ?? HTTP2Error(.connectionBroken, "the connection closed")))
            } else {
                resend(context)
            }
        }
        if let error, !wasUsable, !connections.contains(where: { $0.isUsable || $0.isConnecting }) {
            // No connection could be made: every queued request fails now, with why (the caller's
            // retry policy spaces the next attempts; a new request tries to connect again).
            while !queue.isEmpty {
                let context = queue.removeFirst()
                finish(context, .failure(error))
            }
        }
        loop.markDirty(self)
    }

    /// Times out what is due: queued requests and requests on a stream (the stream is reset),
    /// and connections still not usable after `connectTimeout`.
    func expire(now: ContinuousClock.Instant) {
        while let head = outstanding.head, head.deadline <= now {
            let waited = head.connection == nil ? "waiting for a stream" : "waiting for the answer"
            finish(head, .failure(HTTP2Error(.timeout, "no answer within \(configuration.requestTimeout) (\(waited))")))
        }
        for connection in connections where connection.isConnecting && connection.connectDeadline <= now {
            connection.close(HTTP2Error(.timeout, "no connection within \(configuration.connectTimeout)"))
        }
    }

    /// The earliest request or connect deadline.
    var nextDeadline: ContinuousClock.Instant? {
        var earliest = outstanding.head?.deadline
        for connection in connections where connection.isConnecting {
            if earliest.map({ connection.connectDeadline < $0 }) ?? true { earliest = connection.connectDeadline }
        }
        return earliest
    }

    /// Gives the admission gate back the room of the requests that ended.
    func releaseRoom() {
        guard ended > 0 else { return }
        spec.gate.release(ended)
        ended = 0
    }

    /// The client shut down: everything fails with `.shutdown`; connections say GOAWAY and close.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        let error = HTTP2Error(.shutdown, "the client was shut down")
        for context in outstanding.all { finish(context, .failure(error)) }
        queue.removeAll()
        for connection in connections { connection.close(nil, goingAway: true) }
        connections.removeAll()
    }
}
