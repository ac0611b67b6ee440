import Synchronization

/// Counters of one client, for tests, metrics and benchmarks. Written by the event loop with
/// relaxed atomics; read any time.
public final class HTTP2ClientStatistics: Sendable {
    let connectionsOpened = Atomic<Int>(0)
    let goawaysReceived = Atomic<Int>(0)
    let requestsResent = Atomic<Int>(0)
    let mostStreamsOnAConnection = Atomic<Int>(0)
    let mostQueued = Atomic<Int>(0)
    let mostOutstanding = Atomic<Int>(0)

    init() {}

    /// Connections opened so far (attempts, failed ones included).
    public var connections: Int { connectionsOpened.load(ordering: .relaxed) }
    /// GOAWAY frames received.
    public var goaways: Int { goawaysReceived.load(ordering: .relaxed) }
    /// Requests sent again on another stream because the server provably never processed them
    /// (above a GOAWAY's last stream id, refused, or never written before the connection ended).
    public var resent: Int { requestsResent.load(ordering: .relaxed) }
    /// Most streams that were open at once on one connection.
    public var peakStreams: Int { mostStreamsOnAConnection.load(ordering: .relaxed) }
    /// Most admitted requests that waited at once for a stream.
    public var peakQueued: Int { mostQueued.load(ordering: .relaxed) }
    /// Most requests admitted and unanswered at once (never above `maxOutstandingRequests`).
    public var peakOutstanding: Int { mostOutstanding.load(ordering: .relaxed) }

    static func raise(_ atomic: borrowing Atomic<Int>, to value: Int) {
        var current = atomic.load(ordering: .relaxed)
        while value > current {
            let (exchanged, original) = atomic.compareExchange(
                expected: current, desired: value, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
}
