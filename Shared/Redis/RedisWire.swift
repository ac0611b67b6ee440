/// Commands encoded as RESP in one flat byte buffer, ready for `redisAppendFormattedCommand`.
///
/// Hot paths (pipelined XADD, XACK of a batch, XREADGROUP) build their commands here directly from
/// strings, bytes and ids, instead of one `[UInt8]` per argument plus hiredis' own formatting copy.
/// The buffer is handed to hiredis in one call; hiredis copies it into its output buffer.
struct RedisWire: Sendable {
    private(set) var bytes: [UInt8] = []
    /// How many commands were started (= replies to read).
    private(set) var commandCount = 0

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    init(commands: [[RedisArgument]]) {
        var size = 0
        for command in commands {
            size += 16
            for argument in command { size += argument.bytes.count + 16 }
        }
        self.init(capacity: size)
        for command in commands {
            beginCommand(arguments: command.count)
            for argument in command { append(argument.bytes) }
        }
    }

    /// Starts a command of `arguments` arguments (the name counts as one); exactly that many
    /// `append` calls must follow.
    mutating func beginCommand(arguments: Int) {
        commandCount += 1
        bytes.append(UInt8(ascii: "*"))
        appendDecimal(UInt64(arguments))
        bytes.append(13)
        bytes.append(10)
    }

    mutating func append(_ raw: UnsafeRawBufferPointer) {
        appendHeader(raw.count)
        bytes.append(contentsOf: raw)
        bytes.append(13)
        bytes.append(10)
    }

    mutating func append(_ value: [UInt8]) {
        appendHeader(value.count)
        bytes.append(contentsOf: value)
        bytes.append(13)
        bytes.append(10)
    }

    mutating func append(_ string: String) {
        var string = string
        string.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    mutating func append(_ integer: Int) {
        var digits = 0
        var magnitude = integer.magnitude
        repeat {
            digits += 1
            magnitude /= 10
        } while magnitude > 0
        appendHeader(digits + (integer < 0 ? 1 : 0))
        if integer < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDecimal(UInt64(integer.magnitude))
        bytes.append(13)
        bytes.append(10)
    }

    /// `<milliseconds>-<sequence>` without going through a String.
    mutating func append(_ id: StreamEntryID) {
        appendHeader(Self.decimalLength(id.milliseconds) + 1 + Self.decimalLength(id.sequence))
        appendDecimal(id.milliseconds)
        bytes.append(UInt8(ascii: "-"))
        appendDecimal(id.sequence)
        bytes.append(13)
        bytes.append(10)
    }

    private mutating func appendHeader(_ length: Int) {
        bytes.append(UInt8(ascii: "$"))
        appendDecimal(UInt64(length))
        bytes.append(13)
        bytes.append(10)
    }

    private mutating func appendDecimal(_ value: UInt64) {
        if value < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var index = 20
            var remaining = value
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            } while remaining > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[index...]))
        }
    }

    static func decimalLength(_ value: UInt64) -> Int {
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return digits
    }
}

extension RedisWire {
    /// The commands back as argument lists (for runners that only take `[[RedisArgument]]`).
    func decodedCommands() -> [[RedisArgument]] {
        var commands: [[RedisArgument]] = []
        var index = 0
        func number() -> Int {
            var value = 0
            while index < bytes.count, bytes[index] != 13 {
                value = value * 10 + Int(bytes[index] &- UInt8(ascii: "0"))
                index += 1
            }
            index += 2  // \r\n
            return value
        }
        while index < bytes.count {
            index += 1  // '*'
            let count = number()
            var command: [RedisArgument] = []
            command.reserveCapacity(count)
            for _ in 0..<count {
                index += 1  // '$'
                let length = number()
                command.append(RedisArgument(bytes: Array(bytes[index..<index + length])))
                index += length + 2
            }
            commands.append(command)
        }
        return commands
    }
}
