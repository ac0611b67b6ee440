internal import CHiredis

/// Reads typed results straight out of a hiredis `redisReply` tree, on the connection's thread.
///
/// The generic path (`RedisValue` tree, then typed parsing) allocates several arrays and strings
/// per stream entry; this one allocates the entry's field array and one `[UInt8]` per value.
/// Used by the stream helpers when the runner is a `RedisClient` or `RedisConnection`.
enum RedisReplyParser {
    typealias Reply = UnsafeMutablePointer<redisReply>

    /// An error reply as `RedisError.server`, nil otherwise.
    static func serverError(_ reply: Reply) -> RedisError? {
        let r = reply.pointee
        guard r.type == REDIS_REPLY_ERROR else { return nil }
        return RedisError(.server, String(decoding: UnsafeRawBufferPointer(start: r.str, count: r.len), as: UTF8.self))
    }

    static func unexpected(_ what: String, _ reply: Reply) -> RedisError {
        .unexpected(what, RedisContext.convert(reply))
    }

    /// The bytes of a bulk or status string (valid until the reply is freed).
    static func text(_ reply: Reply) -> UnsafeRawBufferPointer? {
        let r = reply.pointee
        guard r.type == REDIS_REPLY_STRING || r.type == REDIS_REPLY_STATUS else { return nil }
        return UnsafeRawBufferPointer(start: r.str, count: r.len)
    }

    static func isNull(_ reply: Reply) -> Bool { reply.pointee.type == REDIS_REPLY_NIL }

    static func child(_ reply: Reply, _ index: Int) -> Reply? {
        let r = reply.pointee
        guard r.type == REDIS_REPLY_ARRAY, index < r.elements else { return nil }
        return r.element[index]
    }

    static func count(_ reply: Reply) -> Int? {
        let r = reply.pointee
        return r.type == REDIS_REPLY_ARRAY ? r.elements : nil
    }

    static func entryID(_ reply: Reply) -> StreamEntryID? {
        text(reply).flatMap { StreamEntryID(bytes: $0) }
    }

    /// XADD's reply: the new id.
    static func xaddID(_ reply: Reply) throws(RedisError) -> StreamEntryID {
        if let error = serverError(reply) { throw error }
        guard let id = entryID(reply) else { throw unexpected("XADD", reply) }
        return id
    }

    /// `[[id, [f, v, ...]], ...]`; entries whose fields are null (deleted) are skipped.
    static func entries(_ list: Reply, _ what: String) throws(RedisError) -> [StreamEntry] {
        if isNull(list) { return [] }
        guard let total = count(list) else { throw unexpected(what, list) }
        var entries: [StreamEntry] = []
        entries.reserveCapacity(total)
        for index in 0..<total {
            guard let pair = child(list, index), count(pair) == 2, let idReply = child(pair, 0),
                let fieldsReply = child(pair, 1), let id = entryID(idReply)
            else { throw unexpected(what, list) }
            if isNull(fieldsReply) { continue }
            guard let flatCount = count(fieldsReply), flatCount % 2 == 0 else { throw unexpected(what, list) }
            let flat = fieldsReply.pointee.element!
            var fields: [(name: String, value: [UInt8])] = []
            fields.reserveCapacity(flatCount / 2)
            var i = 0
            while i < flatCount {
                guard let nameReply = flat[i], let valueReply = flat[i + 1],
                    let name = text(nameReply), let value = text(valueReply)
                else { throw unexpected(what, list) }
                fields.append((String(decoding: name, as: UTF8.self), [UInt8](value)))
                i += 2
            }
            entries.append(StreamEntry(id: id, fields: fields))
        }
        return entries
    }

    /// XREADGROUP's reply: null (nothing within BLOCK) or `[[stream, entries], ...]`.
    static func readGroup(_ reply: Reply) throws(RedisError) -> [StreamEntry] {
        if let error = serverError(reply) { throw error }
        if isNull(reply) { return [] }
        guard let streams = count(reply) else { throw unexpected("XREADGROUP", reply) }
        var result: [StreamEntry] = []
        for index in 0..<streams {
            guard let pair = child(reply, index), count(pair) == 2, let list = child(pair, 1) else {
                throw unexpected("XREADGROUP", reply)
            }
            if result.isEmpty {
                result = try entries(list, "XREADGROUP")
            } else {
                result += try entries(list, "XREADGROUP")
            }
        }
        return result
    }
}

extension RedisReplyParser {
    /// An integer reply (error replies throw `.server`).
    static func integer(_ what: String) -> @Sendable (Reply) throws(RedisError) -> Int {
        { reply throws(RedisError) in
            if let error = serverError(reply) { throw error }
            let r = reply.pointee
            guard r.type == REDIS_REPLY_INTEGER else { throw unexpected(what, reply) }
            return Int(r.integer)
        }
    }
}
