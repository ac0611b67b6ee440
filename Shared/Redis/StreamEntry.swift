/// A stream entry id `<milliseconds>-<sequence>`, ordered as Redis orders them.
public struct StreamEntryID: Sendable, Hashable, Comparable, CustomStringConvertible, RedisArgumentConvertible {
    public var milliseconds: UInt64
    public var sequence: UInt64

    public init(milliseconds: UInt64, sequence: UInt64) {
        self.milliseconds = milliseconds
        self.sequence = sequence
    }

    /// Parses `"1712345678901-3"` (a bare `"123"` means sequence 0).
    public init?(_ text: String) {
        var text = text
        guard let id = text.withUTF8({ StreamEntryID(bytes: UnsafeRawBufferPointer($0)) }) else { return nil }
        self = id
    }

    /// Parses `<ms>-<seq>` or `<ms>` from ASCII digits without allocating (reply parsing hot path).
    init?(bytes: UnsafeRawBufferPointer) {
        var milliseconds: UInt64 = 0
        var sequence: UInt64 = 0
        var inSequence = false
        var digits = 0
        for byte in bytes {
            if byte == UInt8(ascii: "-") {
                guard !inSequence, digits > 0 else { return nil }
                inSequence = true
                digits = 0
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = UInt64(byte &- UInt8(ascii: "0"))
            let (times, o1) = (inSequence ? sequence : milliseconds).multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(digit)
            guard !o1, !o2 else { return nil }
            if inSequence { sequence = sum } else { milliseconds = sum }
            digits += 1
        }
        guard digits > 0 else { return nil }
        self.init(milliseconds: milliseconds, sequence: sequence)
    }

    /// `0-0`: before every entry (also XAUTOCLAIM's "scan finished" cursor).
    public static let zero = StreamEntryID(milliseconds: 0, sequence: 0)

    public var description: String { "\(milliseconds)-\(sequence)" }
    public var redisArgument: RedisArgument { RedisArgument(description) }

    public static func < (a: StreamEntryID, b: StreamEntryID) -> Bool {
        (a.milliseconds, a.sequence) < (b.milliseconds, b.sequence)
    }
}

/// One stream entry: its id and its field/value pairs in the order they were added.
public struct StreamEntry: Sendable, Equatable, CustomStringConvertible {
    public var id: StreamEntryID
    public var fields: [(name: String, value: [UInt8])]

    public init(id: StreamEntryID, fields: [(name: String, value: [UInt8])]) {
        self.id = id
        self.fields = fields
    }

    /// The value of the first field called `name`.
    public subscript(name: String) -> [UInt8]? {
        fields.first(where: { $0.name == name })?.value
    }

    /// The value of `name` decoded as UTF-8.
    public func string(_ name: String) -> String? {
        self[name].map { String(decoding: $0, as: UTF8.self) }
    }

    /// The fields as a dictionary (a repeated field keeps its last value).
    public var fieldDictionary: [String: [UInt8]] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    public static func == (a: StreamEntry, b: StreamEntry) -> Bool {
        a.id == b.id && a.fields.count == b.fields.count
            && zip(a.fields, b.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public var description: String { "StreamEntry(\(id), \(fields.count) fields)" }
}

/// One row of extended `XPENDING`: who holds the entry, for how long, how often it was delivered.
public struct StreamPendingEntry: Sendable, Hashable {
    public var id: StreamEntryID
    public var consumer: String
    /// Milliseconds since the entry was last delivered.
    public var idleMilliseconds: Int
    public var deliveries: Int
}

/// What `XAUTOCLAIM` returns (Redis 7: cursor, entries, ids of entries deleted from the stream).
public struct StreamAutoClaim: Sendable, Equatable {
    /// Where the next call starts; `StreamEntryID.zero` when the scan is complete.
    public var nextStart: StreamEntryID
    public var entries: [StreamEntry]
    /// Pending entries whose data was trimmed/deleted; Redis removed them from the PEL.
    public var deletedIDs: [StreamEntryID]
}

// MARK: - Reply parsing

extension StreamEntry {
    /// Parses `[[id, [f, v, ...]], ...]`. Entries whose fields are null (deleted) are skipped.
    static func parseList(_ value: RedisValue, _ what: String) throws(RedisError) -> [StreamEntry] {
        if value.isNull { return [] }
        guard let items = value.array else { throw .unexpected(what, value) }
        var entries: [StreamEntry] = []
        entries.reserveCapacity(items.count)
        for item in items {
            guard let pair = item.array, pair.count == 2, let idText = pair[0].string,
                let id = StreamEntryID(idText)
            else { throw .unexpected(what, value) }
            if pair[1].isNull { continue }
            guard let flat = pair[1].array, flat.count % 2 == 0 else { throw .unexpected(what, value) }
            var fields: [(name: String, value: [UInt8])] = []
            fields.reserveCapacity(flat.count / 2)
            for i in stride(from: 0, to: flat.count, by: 2) {
                guard let name = flat[i].string, let bytes = flat[i + 1].bytes else { throw .unexpected(what, value) }
                fields.append((name, bytes))
            }
            entries.append(StreamEntry(id: id, fields: fields))
        }
        return entries
    }
}
