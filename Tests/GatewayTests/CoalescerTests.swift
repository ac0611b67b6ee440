import Foundation
import Synchronization
import Testing

@testable import GatewayApp

/// The coalescer alone, with a callback runner answering on another thread (as the database
/// connection's thread does for subscriber reads).
@Suite("Coalescer")
struct CoalescerTests {
    /// Every caller gets its own result, once; a burst shares batches; at most `maxConcurrent`
    /// batches run at a time; a runner error reaches each caller of that batch.
    @Test func callbackBatchesAnswerEveryCallerOnce() async throws {
        let queue = DispatchQueue(label: "coalescer-test", attributes: .concurrent)
        let running = Atomic<Int>(0)
        let mostRunning = Atomic<Int>(0)
        let batches = Mutex<[Int]>([])
        let coalescer = Coalescer<Int, Int, Int>(
            maxBatch: 8, maxConcurrent: 2,
            observeBatch: { size in
                batches.withLock { $0.append(size) }
            }
        ) { inputs, done in
            let now = running.add(1, ordering: .relaxed).newValue
            _ = mostRunning.max(now, ordering: .relaxed)
            queue.asyncAfter(deadline: .now() + .milliseconds(5)) {
                _ = running.subtract(1, ordering: .relaxed)
                struct Odd: Error {}
                done(inputs.map { $0 == 13 ? .failure(Odd()) : .success($0 * 10) })
            }
        }
        let answers = await withTaskGroup(of: (Int, Int?).self) { group in
            for i in 0..<60 {
                group.addTask { (i, try? await coalescer.submit(key: i, i)) }
            }
            var all: [(Int, Int?)] = []
            for await answer in group { all.append(answer) }
            return all
        }
        #expect(answers.count == 60)
        for (input, output) in answers {
            #expect(output == (input == 13 ? nil : input * 10))
        }
        let sizes = batches.withLock { $0 }
        #expect(sizes.reduce(0, +) == 60)
        #expect(sizes.allSatisfy { $0 <= 8 })
        #expect(sizes.count < 60)
        #expect(mostRunning.load(ordering: .relaxed) <= 2)
    }
}
