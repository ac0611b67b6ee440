import BuzzKitCore
import Synchronization
import Testing

@Suite struct OneShotTests {
    @Test func everyWaiterGetsTheFirstValue() async throws {
        let shot = OneShot<Int>()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<10 { group.addTask { try await shot.wait() } }
            #expect(await eventually { shot.waiterCount == 10 })
            #expect(shot.fulfill(7))
            #expect(!shot.fulfill(8))
            for try await value in group { #expect(value == 7) }
        }
        #expect(try await shot.wait() == 7)
        #expect(shot.waiterCount == 0)
    }

    /// A cancelled waiter is removed at once and throws; the others keep waiting.
    @Test func aCancelledWaiterIsRemoved() async throws {
        let shot = OneShot<Void>()
        let cancelled = Task { try await shot.wait() }
        let kept = Task { try await shot.wait() }
        #expect(await eventually { shot.waiterCount == 2 })
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(shot.waiterCount == 1)
        shot.fulfill(())
        try await kept.value
        #expect(shot.waiterCount == 0)
    }

    @Test func aTaskCancelledBeforeItWaitsNeverParks() async throws {
        let shot = OneShot<Void>()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await shot.wait()
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(shot.waiterCount == 0)
    }

    /// The race `withDeadline` and the loops are built on leaves nothing parked, won or lost.
    @Test func boundedWaitsLeaveNoWaiterBehind() async throws {
        let shot = OneShot<Int>()
        for _ in 0..<2000 {
            #expect(await shot.wait(atMost: .microseconds(10)) == nil)
        }
        #expect(shot.waiterCount == 0)
        let clock = TestClock()
        async let answer = shot.wait(atMost: .seconds(3600), clock: clock)
        #expect(await eventually { shot.waiterCount == 1 && clock.sleeping == 1 })
        shot.fulfill(3)
        #expect(await answer == 3)
        #expect(shot.waiterCount == 0)
        #expect(clock.sleeping == 0)
    }

    @Test func withDeadlineAnswersTheBodyOrTheTimeout() async {
        #expect(await withDeadline(.seconds(30), onTimeout: "late") { "ok" } == "ok")
        let gate = OneShot<Void>()
        #expect(
            await withDeadline(.milliseconds(20), onTimeout: "late") {
                _ = try? await gate.wait()
                return "ok"
            } == "late")
        // The abandoned body was cancelled, so it does not stay parked on the gate.
        #expect(await eventually { gate.waiterCount == 0 })
    }
}
