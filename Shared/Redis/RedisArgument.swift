import Foundation

/// One argument of a Redis command: raw bytes, sent binary-safe (hiredis argv, never a format string).
///
/// String and integer literals work directly: `["SET", "k", "v"]`. Use `RedisArgumentConvertible`
/// values (`String`, `[UInt8]`, `Int`, `Data`, `StreamEntryID`...) with `send(_:_:)`.
public struct RedisArgument: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(_ string: String) { self.bytes = Array(string.utf8) }
    public init(_ integer: Int) { self.bytes = Array(String(integer).utf8) }
    public init(stringLiteral value: String) { self.init(value) }
    public init(integerLiteral value: Int) { self.init(value) }
}

/// Anything that can be a command argument.
public protocol RedisArgumentConvertible: Sendable {
    var redisArgument: RedisArgument { get }
}

extension RedisArgument: RedisArgumentConvertible { public var redisArgument: RedisArgument { self } }
extension String: RedisArgumentConvertible { public var redisArgument: RedisArgument { RedisArgument(self) } }
extension Substring: RedisArgumentConvertible {
    public var redisArgument: RedisArgument { RedisArgument(String(self)) }
}
extension Int: RedisArgumentConvertible { public var redisArgument: RedisArgument { RedisArgument(self) } }
extension Array: RedisArgumentConvertible where Element == UInt8 {
    public var redisArgument: RedisArgument { RedisArgument(bytes: self) }
}
extension ArraySlice: RedisArgumentConvertible where Element == UInt8 {
    public var redisArgument: RedisArgument { RedisArgument(bytes: Array(self)) }
}
extension Data: RedisArgumentConvertible {
    public var redisArgument: RedisArgument { RedisArgument(bytes: Array(self)) }
}
extension Double: RedisArgumentConvertible { public var redisArgument: RedisArgument { RedisArgument(String(self)) } }
