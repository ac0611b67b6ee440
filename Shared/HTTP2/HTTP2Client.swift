import BuzzKitCore
import Foundation

/// Requests to one HTTPS origin over HTTP/2, multiplexed as streams on a few TLS connections that
/// live on an `HTTP2EventLoop`'s thread.
///
/// ```swift
/// let loop = try HTTP2EventLoop(logger: logger)
/// let client = try HTTP2Client(baseURL: "https://api.push.apple.com", eventLoop: loop, logger: logger)
/// let results = await client.execute(batch: requests)   // one result per request, in order
/// await client.shutdown(); await loop.shutdown()
/// ```
/// A batch costs one submission and one suspension, whatever its size. Requests beyond
/// `maxOutstandingRequests` wait for room before they are admitted (backpressure); admitted ones
/// wait in the client for a free stream, then go out on the connection with room, a new
/// connection opening only when every open one is full. Connections are never shared between
/// clients: a client is one origin and one set of credentials (APNs: one team).
///
/// Task cancellation is not observed: every admitted request ends by its answer, its
/// `requestTimeout`, or `shutdown()`.
public final class HTTP2Client: Sendable {
    public let configuration: Configuration
    public let statistics = HTTP2ClientStatistics()
    let eventLoop: HTTP2EventLoop
    let channelID: UInt64
    let gate: AdmissionGate

    /// Registers the client on `eventLoop`. `baseURL` is `https://host[:port]` (a path is ignored).
    /// Throws when the URL is not https or the CA file cannot be loaded.
    public init(
        baseURL: String, configuration: Configuration = Configuration(), eventLoop: HTTP2EventLoop, logger: Logger
    ) throws(HTTP2Error) {
        guard let url = URL(string: baseURL), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty
        else {
            throw HTTP2Error(.invalidRequest, "not an https URL: \(baseURL)")
        }
        let port = url.port ?? 443
        self.configuration = configuration
        self.eventLoop = eventLoop
        gate = AdmissionGate(limit: configuration.maxOutstandingRequests, statistics: statistics)
        channelID = eventLoop.core.makeID()
        let tls = try TLSContext(caFile: configuration.caFile)
        let authority = port == 443 ? host : (host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
        let spec = ChannelSpec(
            id: channelID, host: host, port: port, authority: authority, configuration: configuration, tls: tls,
            gate: gate, statistics: statistics, logger: logger)
        guard eventLoop.core.post(.open(spec)) else {
            throw HTTP2Error(.shutdown, "the event loop was shut down")
        }
    }

    deinit {
        _ = eventLoop.core.post(.close(channel: channelID, reply: nil))
    }

    /// Sends every request and returns when the last one ended: one result per request, in order.
    public func execute(batch requests: [HTTP2Request]) async -> [HTTP2Result] {
        guard !requests.isEmpty else { return [] }
        let limit = gate.limit
        if requests.count <= limit { return await admitted(requests) }
        // Larger than the whole limit: in pieces that each fit, admitted as room frees.
        let pieces = stride(from: 0, to: requests.count, by: limit).map {
            Array(requests[$0..<min($0 + limit, requests.count)])
        }
        return await withTaskGroup(of: (Int, [HTTP2Result]).self) { group in
            for (number, piece) in pieces.enumerated() {
                group.addTask { (number, await self.admitted(piece)) }
            }
            var parts = [[HTTP2Result]](repeating: [], count: pieces.count)
            for await (number, part) in group { parts[number] = part }
            return parts.flatMap { $0 }
        }
    }

    /// Sends one request.
    public func execute(_ request: HTTP2Request) async -> HTTP2Result {
        await execute(batch: [request])[0]
    }

    /// Requests admitted and not yet answered, now.
    public var outstanding: Int { gate.outstanding }
    /// Most requests admitted and not yet answered at once so far (never above the limit).
    public var peakOutstanding: Int { gate.highWater }

    /// Fails what this client has queued or in flight with `.shutdown` and closes its
    /// connections. Later requests fail at once. Safe to call more than once.
    public func shutdown() async {
        let core = eventLoop.core
        let channel = channelID
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !core.post(.close(channel: channel, reply: continuation)) { continuation.resume() }
        }
    }

    private func admitted(_ requests: [HTTP2Request]) async -> [HTTP2Result] {
        await gate.acquire(requests.count)
        let core = eventLoop.core
        let channel = channelID
        let gate = self.gate
        return await withCheckedContinuation { (continuation: CheckedContinuation<[HTTP2Result], Never>) in
            if !core.post(.submit(channel: channel, requests: requests, gate: gate, reply: continuation)) {
                gate.release(requests.count)
                continuation.resume(
                    returning: Self.failed(requests.count, HTTP2Error(.shutdown, "the client was shut down")))
            }
        }
    }

    static func failed(_ count: Int, _ error: HTTP2Error) -> [HTTP2Result] {
        let now = ContinuousClock.now
        return Array(repeating: HTTP2Result(result: .failure(error), finishedAt: now), count: count)
    }
}

/// What the loop needs to run a client's channel.
struct ChannelSpec: Sendable {
    var id: UInt64
    var host: String
    var port: Int
    var authority: String
    var configuration: HTTP2Client.Configuration
    var tls: TLSContext
    var gate: AdmissionGate
    var statistics: HTTP2ClientStatistics
    var logger: Logger
}
