/// How far one consumer group is behind its stream: what an autoscaler acts on.
///
/// Read in one round trip (`XINFO GROUPS`, the `XPENDING` summary, `XLEN` and `TIME`) by
/// `RedisCommandRunner.groupStatus(_:group:)`.
public struct StreamGroupStatus: Sendable, Equatable {
    /// Entries added to the stream and not yet delivered to any consumer of the group.
    /// Redis 7's own count (`lag` of `XINFO GROUPS`); when Redis cannot tell (an entry deleted
    /// with `XDEL` inside the undelivered range) it is the stream's length, an upper bound, and
    /// `lagIsExact` is false.
    public var lag: Int
    public var lagIsExact: Bool
    /// Entries delivered to a consumer of the group and not acknowledged yet.
    public var pending: Int
    /// Milliseconds since the oldest pending entry was added (its id's time against the Redis
    /// server's clock, so no clock of ours is involved); 0 when nothing is pending.
    public var oldestPendingAgeMilliseconds: Int

    public init(lag: Int, lagIsExact: Bool = true, pending: Int, oldestPendingAgeMilliseconds: Int) {
        self.lag = lag
        self.lagIsExact = lagIsExact
        self.pending = pending
        self.oldestPendingAgeMilliseconds = oldestPendingAgeMilliseconds
    }

    /// A stream or group that does not exist yet: nothing waits.
    public static let empty = StreamGroupStatus(lag: 0, pending: 0, oldestPendingAgeMilliseconds: 0)
}

extension RedisCommandRunner {
    /// The lag, pending count and oldest pending entry's age of `group` on `stream`, in one
    /// pipelined round trip. `.empty` when the stream or the group does not exist yet.
    public func groupStatus(_ stream: String, group: String) async throws(RedisError) -> StreamGroupStatus {
        let replies = try await pipeline([
            ["XINFO", "GROUPS", RedisArgument(stream)],
            ["XPENDING", RedisArgument(stream), RedisArgument(group)],
            ["XLEN", RedisArgument(stream)],
            ["TIME"]
        ])
        guard replies.count == 4 else { throw RedisError(.unexpectedReply, "group status: \(replies.count) replies") }
        // No such key (XINFO) or no such group (XPENDING): nothing has been added or read yet.
        if replies[0].errorMessage != nil || replies[1].errorMessage?.hasPrefix("NOGROUP") == true {
            return .empty
        }
        let groups = try replies[0].throwingServerError()
        guard
            let info = (groups.array ?? []).map(Self.fieldMap).first(where: { $0["name"]?.string == group })
        else { return .empty }
        let summary = try replies[1].throwingServerError()
        guard let parts = summary.array, parts.count >= 2, let pending = parts[0].int else {
            throw .unexpected("XPENDING", summary)
        }
        let length = try replies[2].throwingServerError().int ?? 0
        let time = try replies[3].throwingServerError()
        guard let clock = time.array, clock.count == 2, let seconds = clock[0].int, let micros = clock[1].int else {
            throw .unexpected("TIME", time)
        }
        let now = seconds * 1000 + micros / 1000
        var age = 0
        if pending > 0, let oldest = parts[1].string.flatMap(StreamEntryID.init) {
            age = max(0, now - Int(clamping: oldest.milliseconds))
        }
        let lag = info["lag"]?.int
        return StreamGroupStatus(
            lag: lag ?? length, lagIsExact: lag != nil, pending: pending, oldestPendingAgeMilliseconds: age)
    }
}
