import BuzzKitRedis
import BuzzKitTestSupport
import Testing

@Suite(.requiresRedis) struct RedisCommandTests {
    let client: RedisClient
    let prefix = TestEnvironment.uniqueName("cmd")

    init() throws { client = try RedisTestSupport.client() }

    @Test func binarySafeValuesRoundTrip() async throws {
        let key = "\(prefix):bin"
        let value: [UInt8] = [0x00, 0x0D, 0x0A, 0x24, 0x2A, 0xFF, 0x00, 0x0D, 0x0A]
        try await client.set(key, value)
        #expect(try await client.get(key) == value)
        // A key with \0 and \r\n in it, too.
        let oddKey = "\(prefix):k\u{0}\r\n"
        try await client.set(oddKey, "v")
        #expect(try await client.getString(oddKey) == "v")
        #expect(try await client.get("\(prefix):missing") == nil)
        #expect(try await client.del(key, oddKey) == 2)
    }

    @Test func setWithNXAndExpiry() async throws {
        let key = "\(prefix):nx"
        #expect(try await client.set(key, "a", expiry: .seconds(60), onlyIfNotExists: true))
        #expect(try await client.set(key, "b", onlyIfNotExists: true) == false)
        #expect(try await client.getString(key) == "a")
        let ttl = try await client.send("PTTL", key).int ?? -1
        #expect(ttl > 0 && ttl <= 60_000)
        #expect(try await client.expire(key, after: .seconds(10)))
        #expect(try await client.expire("\(prefix):none", after: .seconds(10)) == false)
    }

    @Test func countersAndHashes() async throws {
        let key = "\(prefix):n"
        #expect(try await client.incr(key) == 1)
        #expect(try await client.incrBy(key, 41) == 42)
        let hash = "\(prefix):h"
        #expect(try await client.hset(hash, fields: [("a", "1"), ("b", [UInt8]([0, 1, 2]))]) == 2)
        #expect(try await client.hincrBy(hash, field: "a", by: 5) == 6)
        #expect(try await client.hget(hash, field: "b") == [0, 1, 2])
        #expect(try await client.hgetAll(hash) == ["a": Array("6".utf8), "b": [0, 1, 2]])
        #expect(try await client.hdel(hash, fields: ["a", "zzz"]) == 1)
        #expect(try await client.hget(hash, field: "a") == nil)
    }

    @Test func serverErrorsCarryRedisText() async throws {
        let key = "\(prefix):str"
        try await client.set(key, "x")
        let error = await #expect(throws: RedisError.self) { try await client.incr(key) }
        #expect(error?.code == .server)
        #expect(error?.message.contains("not an integer") == true)
        let wrongType = await #expect(throws: RedisError.self) { try await client.hget(key, field: "f") }
        #expect(wrongType?.serverErrorPrefix == "WRONGTYPE")
    }

    @Test func scriptsRunAndReloadAfterFlush() async throws {
        let key = "\(prefix):script"
        #expect(
            try await client.eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", keys: [key], args: ["7"])
                == .integer(7))
        let script = RedisScript("return redis.call('INCRBY', KEYS[1], ARGV[1]) + 0")
        #expect(try await client.run(script, keys: [key], args: ["3"]) == .integer(10))
        #expect(try await client.run(script, keys: [key], args: ["1"]) == .integer(11))
        try await client.ping()
    }

    @Test func pipelineKeepsOrderAndErrors() async throws {
        let key = "\(prefix):p"
        let notNumber = "\(prefix):pstr"
        var commands: [[RedisArgument]] = (0..<200).map { _ in ["INCR", RedisArgument(key)] }
        commands.insert(["SET", RedisArgument(notNumber), "x"], at: 50)
        commands.insert(["INCR", RedisArgument(notNumber)], at: 51)
        let replies = try await client.pipeline(commands)
        #expect(replies.count == 202)
        #expect(replies[50] == .simpleString("OK"))
        #expect(replies[51].errorMessage?.contains("not an integer") == true)
        let counts = replies.enumerated().filter { $0.offset != 50 && $0.offset != 51 }.map { $0.element.int }
        #expect(counts == (1...200).map { Optional($0) })
    }

    @Test func poolServesManyConcurrentCallers() async throws {
        let key = "\(prefix):concurrent"
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { _ = try await client.incr(key) } }
            try await group.waitForAll()
        }
        #expect(try await client.getString(key) == "50")
    }
}
