import BuzzKitContracts
import BuzzKitCore
import BuzzKitRedis
import BuzzKitWire
import Foundation
import Synchronization

/// Where this gateway replica's Live Activity sends wait for the liveactivity service's answers:
/// one Redis list of its own (`<stream>:reply:<uuid>`, new at every start), read by one loop on a
/// connection of its own (`BLMPOP … COUNT 256`: every answer that arrived in one round trip),
/// each answer handed to its request by `replyId`.
///
/// Why: a `BLPOP` per request held a Redis connection, and its thread, for every send in flight
/// (at most as many as there were waiting connections, the rest queued) and cost each request
/// a hop through the Swift pool; here a request costs a dictionary entry, and the loop runs on
/// the connection's thread, re-submitting itself: no task, no continuation. An answer reaches
/// its request on that thread, which sends the HTTP response from there.
///
/// A request's wait ends exactly once: with its answer, or `nil` at its deadline (checked every
/// `sweepInterval`, so a 504 comes at most that much after it) or at `shutdown()`. An answer
/// nobody waits for any more (its deadline passed) is dropped; the list expires
/// `LiveActivityEntry.replyTTL` after the last answer pushed to it, so a replica that stopped
/// leaves nothing behind for long.
final class LiveActivityReplies: Service {
    let name = "live-activity-replies"
    /// The list the liveactivity service answers this replica's requests on.
    let key: String
    private let connection: RedisConnection
    private let logger: Logger
    private let state = Mutex(State())
    private let finished = OneShot<Void>()
    private let nextId = Atomic<UInt64>(0)

    /// How long one read blocks when nothing arrives, and so how late a deadline can be noticed.
    static let sweepInterval: Duration = .milliseconds(50)
    /// Most answers taken in one read.
    static let readCount = 256

    private struct Waiter {
        var deadline: ContinuousClock.Instant
        var deliver: @Sendable (LiveActivityReply?) -> Void
    }

    private struct State {
        var waiters: [String: Waiter] = [:]
        var started = false
        var stopping = false
    }

    /// `BLMPOP <sweepInterval> 1 <key> LEFT COUNT <readCount>`, built once.
    private let readCommand: [RedisArgument]

    init(redis: RedisClient, stream: StreamName, logger: Logger) {
        key = stream.rawValue + ":reply:" + UUID().uuidString.lowercased()
        let milliseconds =
            Self.sweepInterval.components.seconds * 1000
            + Self.sweepInterval.components.attoseconds / 1_000_000_000_000_000
        readCommand = [
            "BLMPOP", RedisArgument(String(Double(milliseconds) / 1000)), "1", RedisArgument(key), "LEFT", "COUNT",
            RedisArgument(Self.readCount)
        ]
        connection = redis.makeDedicatedConnection(name: "la-replies")
        self.logger = logger
    }

    /// A reply id unique within this replica's list.
    func makeReplyId() -> String { String(nextId.wrappingAdd(1, ordering: .relaxed).newValue) }

    /// Waits for the answer to `replyId` until `deadline` from now: `deliver` gets it, or nil when
    /// the deadline passed or the replica is stopping (then at once). Called from any thread;
    /// `deliver` runs on the reader's thread and must not block.
    func wait(_ replyId: String, deadline: Duration, deliver: @escaping @Sendable (LiveActivityReply?) -> Void) {
        let stopping = state.withLock { state -> Bool in
            guard !state.stopping else { return true }
            state.waiters[replyId] = Waiter(deadline: .now + deadline, deliver: deliver)
            return false
        }
        if stopping { deliver(nil) }
    }

    /// Forgets a wait without delivering anything (its request could not be queued); false when
    /// it had ended already (its `deliver` ran or is running).
    func cancel(_ replyId: String) -> Bool {
        state.withLock { $0.waiters.removeValue(forKey: replyId) != nil }
    }

    /// Requests waiting now (tests, metrics).
    var waiting: Int { state.withLock { $0.waiters.count } }

    // MARK: - Service

    /// Reads until `shutdown()`, then ends every wait still open (nil: 504 `upstream_timeout`).
    func run() async throws {
        let start = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started && !state.stopping
        }
        if start { read(sweptAt: .now) } else { finished.fulfill(()) }
        let readerEnded = await withTaskCancellationHandler {
            (try? await finished.wait()) != nil
        } onCancel: {
            state.withLock { $0.stopping = true }
        }
        let left = state.withLock { state in
            defer { state.waiters = [:] }
            return state.waiters.values.map(\.deliver)
        }
        for deliver in left { deliver(nil) }
        // Cancelled (a shutdown past its timeout): the reader ends at its next completion, and the
        // connection closes with this object; disconnecting now could race that last read.
        if readerEnded { await connection.disconnect() }
    }

    func shutdown() async {
        let idle = state.withLock { state -> Bool in
            state.stopping = true
            return !state.started
        }
        if idle { finished.fulfill(()) }
    }

    // MARK: - The loop

    /// One `BLMPOP` on the connection's thread; its completion hands the answers over, ends the
    /// waits past their deadline (at most every `sweepInterval`) and submits the next read.
    private func read(sweptAt: ContinuousClock.Instant) {
        if state.withLock({ $0.stopping }) {
            finished.fulfill(())
            return
        }
        connection.command(readCommand, timeout: Self.sweepInterval + .seconds(2)) { [self] result in
            switch result {
            case .success(let value):
                deliver(value)
            case .failure(let error):
                logger.warning(
                    "reading Live Activity answers failed, retrying",
                    metadata: ["error.code": error.code.rawValue, "error": error.message])
                Thread.sleep(forTimeInterval: 0.1)  // this connection's own thread: nothing else waits on it
            }
            let now = ContinuousClock.now
            var swept = sweptAt
            if now - sweptAt >= Self.sweepInterval {
                expire(now)
                swept = now
            }
            read(sweptAt: swept)
        }
    }

    /// `[key, [answer, ...]]` (or nil when the read timed out): each answer to its waiter.
    private func deliver(_ value: RedisValue) {
        guard let pair = value.array, pair.count == 2, let answers = pair[1].array else { return }
        for answer in answers {
            guard let bytes = answer.bytes, let json = try? JSONValue.parse(bytes),
                let replyId = json["replyId"]?.stringValue
            else {
                logger.warning("a Live Activity answer without a reply id was dropped")
                continue
            }
            guard let waiter = state.withLock({ $0.waiters.removeValue(forKey: replyId) }) else { continue }
            waiter.deliver(LiveActivityReply(json: json))
        }
    }

    private func expire(_ now: ContinuousClock.Instant) {
        let expired = state.withLock { state -> [Waiter] in
            let ids = state.waiters.filter { $0.value.deadline <= now }.map(\.key)
            return ids.compactMap { state.waiters.removeValue(forKey: $0) }
        }
        for waiter in expired { waiter.deliver(nil) }
    }
}
