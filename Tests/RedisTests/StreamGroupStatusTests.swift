import BuzzKitRedis
import BuzzKitTestSupport
import Foundation
import Testing

/// `groupStatus`: the lag, pending count and oldest pending age an autoscaler reads, against
/// what the stream really holds.
@Suite(.requiresRedis) struct StreamGroupStatusTests {
    let client: RedisClient
    let stream = TestEnvironment.uniqueName("lag")

    init() throws { client = try RedisTestSupport.client() }

    @Test func noStreamOrNoGroupIsEmpty() async throws {
        #expect(try await client.groupStatus(stream, group: "g") == .empty)
        _ = try await client.xadd(stream, fields: [("n", "0")])
        #expect(try await client.groupStatus(stream, group: "g") == .empty)
    }

    @Test func lagPendingAndAgeFollowReadsAndAcks() async throws {
        #expect(try await client.createGroup(stream, group: "g"))
        var ids: [StreamEntryID] = []
        for i in 0..<10 { ids.append(try await client.xadd(stream, fields: [("n", String(i))])) }
        var status = try await client.groupStatus(stream, group: "g")
        #expect(status == StreamGroupStatus(lag: 10, pending: 0, oldestPendingAgeMilliseconds: 0))

        let reader = client.makeDedicatedConnection()
        let read = try await reader.readGroup(stream, group: "g", consumer: "a", count: 4)
        #expect(read.map(\.id) == Array(ids[0..<4]))
        try await Task.sleep(for: .milliseconds(300))
        status = try await client.groupStatus(stream, group: "g")
        #expect(status.lag == 6)
        #expect(status.lagIsExact)
        #expect(status.pending == 4)
        // The oldest pending entry was added before the sleep; well under a minute ago.
        #expect(status.oldestPendingAgeMilliseconds >= 300)
        #expect(status.oldestPendingAgeMilliseconds < 60_000)

        #expect(try await client.ack(stream, group: "g", ids: [ids[0], ids[1]]) == 2)
        status = try await client.groupStatus(stream, group: "g")
        #expect(status.pending == 2)
        #expect(try await client.ack(stream, group: "g", ids: [ids[2], ids[3]]) == 2)
        status = try await client.groupStatus(stream, group: "g")
        #expect(status == StreamGroupStatus(lag: 6, pending: 0, oldestPendingAgeMilliseconds: 0))
    }

    /// An entry deleted inside the unread range: Redis cannot count the lag, so the stream's
    /// length stands in (an upper bound) and the status says it is not exact.
    @Test func lagFallsBackToTheLengthWhenRedisCannotCount() async throws {
        #expect(try await client.createGroup(stream, group: "g"))
        var ids: [StreamEntryID] = []
        for i in 0..<5 { ids.append(try await client.xadd(stream, fields: [("n", String(i))])) }
        let reader = client.makeDedicatedConnection()
        _ = try await reader.readGroup(stream, group: "g", consumer: "a", count: 1)
        _ = try await client.send("XDEL", stream, ids[3].description)
        let status = try await client.groupStatus(stream, group: "g")
        #expect(!status.lagIsExact)
        #expect(status.lag == 4)  // XLEN: what is left in the stream, the pending entry included
        #expect(status.pending == 1)
    }
}
