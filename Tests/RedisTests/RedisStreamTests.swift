import BuzzKitRedis
import BuzzKitTestSupport
import Testing

@Suite(.requiresRedis) struct RedisStreamTests {
    let client: RedisClient
    let stream = TestEnvironment.uniqueName("stream")

    init() throws { client = try RedisTestSupport.client() }

    @Test func xaddAndRangeAreBinarySafe() async throws {
        let payload: [UInt8] = [0, 13, 10, 0xFF, 0]
        let id = try await client.xadd(stream, fields: [("kind", Array("bin".utf8)), ("data", payload)])
        let entries = try await client.xrange(stream)
        #expect(entries.count == 1)
        #expect(entries[0].id == id)
        #expect(entries[0]["data"] == payload)
        #expect(entries[0].string("kind") == "bin")
        #expect(entries[0].fields.map(\.name) == ["kind", "data"])
    }

    @Test func approximateMaxLengthCapsTheStream() async throws {
        let batch = (0..<2000).map { i in [("n", Array(String(i).utf8))] }
        let ids = try await client.xaddBatch(stream, entries: batch, maxLength: 100, chunkSize: 250)
        #expect(ids.count == 2000)
        #expect(ids == ids.sorted())
        let length = try await client.xlen(stream)
        #expect(length >= 100)
        #expect(length < 2000)
        // The newest entries survive the trimming.
        let last = try await client.xrange(stream, start: ids[1999].description, end: "+")
        #expect(last.first?.string("n") == "1999")
    }

    @Test func groupReadAckPendingAndClaim() async throws {
        #expect(try await client.createGroup(stream, group: "g"))
        #expect(try await client.createGroup(stream, group: "g") == false)  // BUSYGROUP tolerated
        for i in 0..<5 { try await client.xadd(stream, fields: [("i", String(i))]) }
        let reader = client.makeDedicatedConnection()
        let read = try await reader.readGroup(stream, group: "g", consumer: "a", count: 10, block: .milliseconds(100))
        #expect(read.map { $0.string("i") } == ["0", "1", "2", "3", "4"])
        #expect(try await client.ack(stream, group: "g", ids: [read[0].id, read[1].id]) == 2)
        let pending = try await client.pending(stream, group: "g", count: 10)
        #expect(pending.map(\.id) == read[2...].map(\.id))
        #expect(pending.allSatisfy { $0.consumer == "a" && $0.deliveries == 1 })
        // Nothing new: a BLOCK read returns empty after the block time.
        #expect(
            try await reader.readGroup(stream, group: "g", consumer: "a", count: 10, block: .milliseconds(50)).isEmpty)
        // Consumer b takes over everything a holds.
        let claim = try await client.autoClaim(stream, group: "g", consumer: "b", minIdle: .zero, count: 10)
        #expect(claim.entries.map(\.id) == read[2...].map(\.id))
        #expect(claim.nextStart == .zero)
        #expect(claim.deletedIDs.isEmpty)
        let after = try await client.pending(stream, group: "g", count: 10, consumer: "b")
        #expect(after.count == 3 && after.allSatisfy { $0.deliveries == 2 })
    }
}

/// A runner of someone else's: only `command` and `pipeline`. The stream helpers must work on it
/// through the generic path (no hiredis reply parsing on the connection thread).
struct ForwardingRunner: RedisCommandRunner {
    let client: RedisClient
    var configuration: RedisConfiguration { client.configuration }
    func command(_ args: [RedisArgument], timeout: Duration?) async throws(RedisError) -> RedisValue {
        try await client.command(args, timeout: timeout)
    }
    func pipeline(_ commands: [[RedisArgument]], timeout: Duration?) async throws(RedisError) -> [RedisValue] {
        try await client.pipeline(commands, timeout: timeout)
    }
}

@Suite(.requiresRedis) struct RedisStreamGenericRunnerTests {
    @Test func streamHelpersWorkOnAnyRunner() async throws {
        let client = try RedisTestSupport.client()
        let runner = ForwardingRunner(client: client)
        let stream = TestEnvironment.uniqueName("generic")
        let payload: [UInt8] = [0, 13, 10, 36, 42, 0xFF]
        let ids = try await runner.xaddBatch(
            stream, entries: (0..<30).map { [("n", Array(String($0).utf8)), ("p", payload)] },
            maxLength: 1000, chunkSize: 8)
        #expect(ids.count == 30 && ids == ids.sorted())
        try await runner.createGroup(stream, group: "g")
        let read = try await runner.readGroup(stream, group: "g", consumer: "c", count: 50, block: .milliseconds(10))
        #expect(read.map(\.id) == ids)
        #expect(read.allSatisfy { $0["p"] == payload })
        #expect(read.map { $0.string("n") } == (0..<30).map { String($0) })
        #expect(try await runner.ack(stream, group: "g", ids: Array(ids[0..<20])) == 20)
        #expect(try await client.pending(stream, group: "g", count: 50).map(\.id) == Array(ids[20...]))
        let error = await #expect(throws: RedisError.self) {
            try await runner.readGroup(stream, group: "nope", consumer: "c", count: 1)
        }
        #expect(error?.serverErrorPrefix == "NOGROUP")
        _ = try await client.del(stream)
    }
}
