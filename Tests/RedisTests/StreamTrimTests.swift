import BuzzKitRedis
import BuzzKitTestSupport
import Testing

/// `trimAcknowledged` drops only what every consumer group has acknowledged.
@Suite(.requiresRedis) struct StreamTrimTests {
    let client: RedisClient
    let stream = TestEnvironment.uniqueName("trim")

    init() throws { client = try RedisTestSupport.client() }

    @Test func boundaryIsTheSlowestGroupsOldestUnacknowledgedEntry() async throws {
        #expect(try await client.acknowledgedBoundary(stream) == nil)  // no stream yet
        #expect(try await client.createGroup(stream, group: "fast"))
        #expect(try await client.createGroup(stream, group: "slow"))
        var ids: [StreamEntryID] = []
        for i in 0..<10 { ids.append(try await client.xadd(stream, fields: [("i", String(i))])) }
        #expect(try await client.acknowledgedBoundary(stream) == nil)  // no group has read anything

        let reader = client.makeDedicatedConnection()
        let fast = try await reader.readGroup(stream, group: "fast", consumer: "a", count: 10)
        #expect(try await client.ack(stream, group: "fast", ids: fast.map(\.id)) == 10)
        let slow = try await reader.readGroup(stream, group: "slow", consumer: "b", count: 5)
        #expect(try await client.ack(stream, group: "slow", ids: [slow[0].id, slow[1].id, slow[3].id]) == 3)
        // slow still holds ids[2] and ids[4] pending: nothing from ids[2] on may go.
        #expect(try await client.acknowledgedBoundary(stream) == ids[2])

        #expect(try await client.ack(stream, group: "slow", ids: [slow[2].id, slow[4].id]) == 2)
        // Nothing pending: slow has read up to ids[4], entries after it are unread.
        #expect(try await client.acknowledgedBoundary(stream) == ids[4])
        _ = try await client.trimAcknowledged(stream)
        let left = try await client.xrange(stream).map(\.id)
        #expect(Array(ids[4...]).allSatisfy(left.contains))  // unread entries survive
    }

    @Test func acknowledgedEntriesAreTrimmed() async throws {
        #expect(try await client.createGroup(stream, group: "g"))
        let batch = (0..<1000).map { i in [("n", Array(String(i).utf8))] }
        let ids = try await client.xaddBatch(stream, entries: batch, maxLength: nil, chunkSize: 250)
        let reader = client.makeDedicatedConnection()
        let read = try await reader.readGroup(stream, group: "g", consumer: "a", count: 1000)
        #expect(read.count == 1000)
        #expect(try await client.ack(stream, group: "g", ids: Array(read.prefix(900).map(\.id))) == 900)
        let removed = try await client.trimAcknowledged(stream)
        #expect(removed > 0)  // whole stream nodes (100 entries by default) below ids[900] go
        let left = try await client.xrange(stream).map(\.id)
        #expect(left.count == 1000 - removed)
        #expect(Array(ids[900...]).allSatisfy(left.contains))  // the pending ones stay
    }
}
