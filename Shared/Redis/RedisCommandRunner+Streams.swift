// MARK: - Streams and consumer groups

extension RedisCommandRunner {
    /// `XADD stream [MAXLEN ~ n] id f v ...`; returns the new id. `maxLength` caps the stream
    /// approximately (cheap trimming); nil leaves it uncapped.
    @discardableResult
    public func xadd(
        _ stream: String, fields: [(String, [UInt8])], maxLength: Int? = nil,
        id: String = "*"
    ) async throws(RedisError) -> StreamEntryID {
        var wire = RedisWire(capacity: Self.xaddSize(stream, fields))
        Self.appendXAdd(&wire, stream, fields: fields, maxLength: maxLength, id: id)
        let ids = try await execute(wire, RedisReplyParser.xaddID, fallback: Self.xaddID)
        guard let entryID = ids.first else { throw RedisError(.unexpectedReply, "XADD: no reply") }
        return entryID
    }

    /// `xadd` with text values.
    @discardableResult
    public func xadd(
        _ stream: String, fields: [(String, String)], maxLength: Int? = nil,
        id: String = "*"
    ) async throws(RedisError) -> StreamEntryID {
        try await xadd(stream, fields: fields.map { ($0.0, Array($0.1.utf8)) }, maxLength: maxLength, id: id)
    }

    /// Many XADDs pipelined, `chunkSize` (default 1000) per round trip; ids in input order.
    /// The first error reply throws (entries before it were added, and so were the others of its chunk).
    @discardableResult
    public func xaddBatch(
        _ stream: String, entries: [[(String, [UInt8])]], maxLength: Int? = nil,
        chunkSize: Int = 1000
    ) async throws(RedisError) -> [StreamEntryID] {
        var ids: [StreamEntryID] = []
        ids.reserveCapacity(entries.count)
        var start = 0
        while start < entries.count {
            let end = min(entries.count, start + max(1, chunkSize))
            var size = 0
            for entry in entries[start..<end] { size += Self.xaddSize(stream, entry) }
            var wire = RedisWire(capacity: size)
            for entry in entries[start..<end] {
                Self.appendXAdd(&wire, stream, fields: entry, maxLength: maxLength, id: "*")
            }
            ids += try await execute(wire, RedisReplyParser.xaddID, fallback: Self.xaddID)
            start = end
        }
        return ids
    }

    public func xlen(_ stream: String) async throws(RedisError) -> Int {
        try await integer(["XLEN", RedisArgument(stream)], "XLEN")
    }

    /// `XRANGE stream start end [COUNT n]`.
    public func xrange(
        _ stream: String, start: String = "-", end: String = "+",
        count: Int? = nil
    ) async throws(RedisError) -> [StreamEntry] {
        var args: [RedisArgument] = ["XRANGE", RedisArgument(stream), RedisArgument(start), RedisArgument(end)]
        if let count { args += ["COUNT", RedisArgument(count)] }
        return try StreamEntry.parseList(try await command(args), "XRANGE")
    }

    /// `XGROUP CREATE stream group startID [MKSTREAM]`. Returns false when the group already
    /// existed (BUSYGROUP is not an error here). `startID` "0" delivers the whole stream, "$" only new entries.
    @discardableResult
    public func createGroup(
        _ stream: String, group: String, startID: String = "0",
        makeStream: Bool = true
    ) async throws(RedisError) -> Bool {
        var args: [RedisArgument] = [
            "XGROUP", "CREATE", RedisArgument(stream), RedisArgument(group), RedisArgument(startID)
        ]
        if makeStream { args.append("MKSTREAM") }
        do {
            _ = try await command(args)
            return true
        } catch  where error.serverErrorPrefix == "BUSYGROUP" {
            return false
        }
    }

    /// `XREADGROUP GROUP g c COUNT n [BLOCK ms] STREAMS stream id`. `id` ">" reads new entries;
    /// an explicit id re-reads this consumer's own pending entries after it. With `block`, the socket
    /// timeout is `commandTimeout + block`, and the call holds the connection: use a dedicated one.
    public func readGroup(
        _ stream: String, group: String, consumer: String, count: Int, block: Duration? = nil,
        id: String = ">"
    ) async throws(RedisError) -> [StreamEntry] {
        var wire = RedisWire()
        var timeout: Duration? = nil
        if let block { timeout = configuration.commandTimeout + block }
        Self.appendReadGroup(&wire, stream, group: group, consumer: consumer, count: count, block: block, id: id)
        let batches = try await execute(
            wire, timeout: timeout, RedisReplyParser.readGroup, fallback: Self.readGroupEntries)
        return batches.first ?? []
    }

    /// `XACK stream group id ...`; returns how many were pending.
    @discardableResult
    public func ack(_ stream: String, group: String, ids: [StreamEntryID]) async throws(RedisError) -> Int {
        guard !ids.isEmpty else { return 0 }
        var wire = RedisWire(capacity: 64 + ids.count * 32)
        Self.appendAck(&wire, stream, group: group, ids: ids)
        let counts = try await execute(
            wire, RedisReplyParser.integer("XACK"),
            fallback: { value throws(RedisError) in
                guard case .integer(let n) = value else { throw .unexpected("XACK", value) }
                return n
            })
        return counts.first ?? 0
    }

    /// `XAUTOCLAIM stream group consumer minIdle start COUNT n`: takes over entries pending
    /// longer than `minIdle` with any consumer (dead ones included). Increments their delivery count.
    public func autoClaim(
        _ stream: String, group: String, consumer: String, minIdle: Duration,
        start: StreamEntryID = .zero, count: Int = 100
    ) async throws(RedisError) -> StreamAutoClaim {
        let reply = try await command([
            "XAUTOCLAIM", RedisArgument(stream), RedisArgument(group), RedisArgument(consumer),
            RedisArgument(RedisConfiguration.milliseconds(minIdle)), start.redisArgument,
            "COUNT", RedisArgument(max(1, count))
        ])
        guard let parts = reply.array, parts.count >= 2, let cursorText = parts[0].string,
            let cursor = StreamEntryID(cursorText)
        else { throw .unexpected("XAUTOCLAIM", reply) }
        let entries = try StreamEntry.parseList(parts[1], "XAUTOCLAIM")
        var deleted: [StreamEntryID] = []
        if parts.count >= 3, let ids = parts[2].array {
            deleted = ids.compactMap { $0.string.flatMap(StreamEntryID.init) }
        }
        return StreamAutoClaim(nextStart: cursor, entries: entries, deletedIDs: deleted)
    }

    /// `XCLAIM stream group consumer 0 id ... JUSTID`: makes `consumer` the owner of the pending
    /// `ids` and resets their idle time, without counting a delivery (a consumer still working on
    /// its entries says so). Returns the ids still pending (acked ones are skipped).
    @discardableResult
    public func keepClaimed(
        _ stream: String, group: String, consumer: String,
        ids: [StreamEntryID]
    ) async throws(RedisError) -> [StreamEntryID] {
        guard !ids.isEmpty else { return [] }
        var args: [RedisArgument] = [
            "XCLAIM", RedisArgument(stream), RedisArgument(group), RedisArgument(consumer), "0"
        ]
        args.reserveCapacity(args.count + ids.count + 1)
        for id in ids { args.append(id.redisArgument) }
        args.append("JUSTID")
        let reply = try await command(args)
        guard let kept = reply.array else { throw .unexpected("XCLAIM", reply) }
        return kept.compactMap { $0.string.flatMap(StreamEntryID.init) }
    }

    /// Extended `XPENDING stream group [IDLE ms] start end count [consumer]`.
    public func pending(
        _ stream: String, group: String, idle: Duration? = nil, start: String = "-", end: String = "+",
        count: Int = 100, consumer: String? = nil
    ) async throws(RedisError) -> [StreamPendingEntry] {
        let reply = try await command(
            Self.pendingArguments(
                stream, group: group, idle: idle, start: start, end: end,
                count: count, consumer: consumer))
        return try Self.parsePending(reply)
    }

    // MARK: Argument builders (shared with pipelines)

    static func xaddSize(_ stream: String, _ fields: [(String, [UInt8])]) -> Int {
        var size = 48 + stream.utf8.count
        for (name, value) in fields { size += name.utf8.count + value.count + 24 }
        return size
    }

    static func appendXAdd(
        _ wire: inout RedisWire, _ stream: String, fields: [(String, [UInt8])],
        maxLength: Int?, id: String
    ) {
        wire.beginCommand(arguments: 3 + (maxLength == nil ? 0 : 3) + fields.count * 2)
        wire.append("XADD")
        wire.append(stream)
        if let maxLength {
            wire.append("MAXLEN")
            wire.append("~")
            wire.append(max(0, maxLength))
        }
        wire.append(id)
        for (name, value) in fields {
            wire.append(name)
            wire.append(value)
        }
    }

    static func appendReadGroup(
        _ wire: inout RedisWire, _ stream: String, group: String, consumer: String,
        count: Int, block: Duration?, id: String
    ) {
        wire.beginCommand(arguments: block == nil ? 9 : 11)
        wire.append("XREADGROUP")
        wire.append("GROUP")
        wire.append(group)
        wire.append(consumer)
        wire.append("COUNT")
        wire.append(max(1, count))
        if let block {
            wire.append("BLOCK")
            wire.append(max(0, RedisConfiguration.milliseconds(block)))
        }
        wire.append("STREAMS")
        wire.append(stream)
        wire.append(id)
    }

    static func appendAck(_ wire: inout RedisWire, _ stream: String, group: String, ids: [StreamEntryID]) {
        wire.beginCommand(arguments: 3 + ids.count)
        wire.append("XACK")
        wire.append(stream)
        wire.append(group)
        for id in ids { wire.append(id) }
    }

    static func xaddID(_ value: RedisValue) throws(RedisError) -> StreamEntryID {
        guard let text = value.string, let id = StreamEntryID(text) else { throw .unexpected("XADD", value) }
        return id
    }

    /// The generic-path parse of an XREADGROUP reply.
    static func readGroupEntries(_ reply: RedisValue) throws(RedisError) -> [StreamEntry] {
        if reply.isNull { return [] }
        guard let streams = reply.array else { throw .unexpected("XREADGROUP", reply) }
        var entries: [StreamEntry] = []
        for item in streams {
            guard let pair = item.array, pair.count == 2 else { throw .unexpected("XREADGROUP", reply) }
            entries += try StreamEntry.parseList(pair[1], "XREADGROUP")
        }
        return entries
    }

    static func ackArguments(_ stream: String, group: String, ids: [StreamEntryID]) -> [RedisArgument] {
        ["XACK", RedisArgument(stream), RedisArgument(group)] + ids.map(\.redisArgument)
    }

    static func pendingArguments(
        _ stream: String, group: String, idle: Duration?, start: String, end: String,
        count: Int, consumer: String?
    ) -> [RedisArgument] {
        var args: [RedisArgument] = ["XPENDING", RedisArgument(stream), RedisArgument(group)]
        if let idle { args += ["IDLE", RedisArgument(RedisConfiguration.milliseconds(idle))] }
        args += [RedisArgument(start), RedisArgument(end), RedisArgument(max(1, count))]
        if let consumer { args.append(RedisArgument(consumer)) }
        return args
    }

    static func parsePending(_ reply: RedisValue) throws(RedisError) -> [StreamPendingEntry] {
        guard let rows = reply.array else { throw .unexpected("XPENDING", reply) }
        var result: [StreamPendingEntry] = []
        result.reserveCapacity(rows.count)
        for row in rows {
            guard let cols = row.array, cols.count == 4, let idText = cols[0].string, let id = StreamEntryID(idText),
                let consumer = cols[1].string, let idle = cols[2].int, let deliveries = cols[3].int
            else {
                throw .unexpected("XPENDING", reply)
            }
            result.append(
                StreamPendingEntry(id: id, consumer: consumer, idleMilliseconds: idle, deliveries: deliveries))
        }
        return result
    }
}
