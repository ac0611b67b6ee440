/// Capping a consumed stream: DESIGN's "streams are capped only after their entries are durable".
/// Consumers acknowledge an entry only after its work is stored (in Postgres), so every entry older
/// than what each group still holds (pending) or has not read yet is safe to drop.
extension RedisCommandRunner {
    /// The id below which every consumer group of `stream` has read and acknowledged every entry:
    /// the smallest over the groups of (their oldest pending entry, or their last-delivered id when
    /// nothing is pending). nil when the stream or its groups do not exist, or a group has read nothing.
    public func acknowledgedBoundary(_ stream: String) async throws(RedisError) -> StreamEntryID? {
        let groups: RedisValue
        do {
            groups = try await send("XINFO", "GROUPS", stream)
        } catch let error where error.code == .server {
            return nil  // no such stream (yet)
        }
        var boundary: StreamEntryID?
        for group in groups.array ?? [] {
            let info = Self.fieldMap(group)
            guard let name = info["name"]?.string,
                let lastDelivered = info["last-delivered-id"]?.string.flatMap(StreamEntryID.init)
            else { return nil }
            var groupBoundary = lastDelivered
            if (info["pending"]?.int ?? 0) > 0 {
                // XPENDING summary: [count, smallest id, greatest id, consumers].
                let summary = try await send("XPENDING", stream, name)
                guard let parts = summary.array, parts.count >= 2,
                    let oldest = parts[1].string.flatMap(StreamEntryID.init)
                else { return nil }
                groupBoundary = min(groupBoundary, oldest)
            }
            boundary = boundary.map { min($0, groupBoundary) } ?? groupBoundary
        }
        guard let boundary, boundary != .zero else { return nil }
        return boundary
    }

    /// Drops the entries every group has acknowledged (`XTRIM stream MINID ~ boundary`; the `~`
    /// lets Redis drop whole nodes only, so a few acknowledged entries may stay). Returns how many
    /// entries were removed.
    @discardableResult
    public func trimAcknowledged(_ stream: String) async throws(RedisError) -> Int {
        guard let boundary = try await acknowledgedBoundary(stream) else { return 0 }
        return try await send("XTRIM", stream, "MINID", "~", boundary.description).int ?? 0
    }

    /// A RESP2 flat `[key, value, key, value, ...]` reply as a dictionary.
    static func fieldMap(_ value: RedisValue) -> [String: RedisValue] {
        let fields = value.array ?? []
        var map: [String: RedisValue] = [:]
        var index = 0
        while index + 1 < fields.count {
            if let key = fields[index].string { map[key] = fields[index + 1] }
            index += 2
        }
        return map
    }
}
