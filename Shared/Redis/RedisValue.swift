/// One Redis reply (RESP2 as hiredis 0.14 parses it).
///
/// `null` stands for both the null bulk string and the null array. Server error replies appear as
/// `.error` inside pipelines and transactions; single commands throw them as `RedisError.server`.
public enum RedisValue: Sendable, Hashable {
    case simpleString(String)
    case error(String)
    case integer(Int)
    case bulkString([UInt8])
    case array([RedisValue])
    case null
}

// MARK: - Accessors

extension RedisValue {
    /// The text of a simple or bulk string (bulk bytes decoded as UTF-8, invalid bytes replaced).
    public var string: String? {
        switch self {
        case .simpleString(let s): s
        case .bulkString(let b): String(decoding: b, as: UTF8.self)
        case .integer(let i): String(i)
        default: nil
        }
    }

    /// The raw bytes of a bulk or simple string.
    public var bytes: [UInt8]? {
        switch self {
        case .bulkString(let b): b
        case .simpleString(let s): Array(s.utf8)
        default: nil
        }
    }

    /// An integer reply, or a string reply holding a decimal integer.
    public var int: Int? {
        switch self {
        case .integer(let i): i
        case .bulkString, .simpleString: string.flatMap { Int($0) }
        default: nil
        }
    }

    public var array: [RedisValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The error text of an `.error` reply.
    public var errorMessage: String? {
        if case .error(let e) = self { return e }
        return nil
    }

    /// `.error` replies as a thrown `RedisError.server`; anything else returned unchanged.
    public func throwingServerError() throws(RedisError) -> RedisValue {
        if case .error(let message) = self { throw RedisError(.server, message) }
        return self
    }

    /// A bounded description for error messages (never the whole of a large value).
    var shortDescription: String {
        switch self {
        case .simpleString(let s): "simple(\(s.prefix(64)))"
        case .error(let e): "error(\(e.prefix(128)))"
        case .integer(let i): "integer(\(i))"
        case .bulkString(let b): "bulk(\(b.count) bytes)"
        case .array(let a): "array(\(a.count))"
        case .null: "null"
        }
    }
}
