import Testing

@testable import BuzzKitCore

/// The loop skeleton with no I/O: time is a `TestClock`, bodies are closures.
@Suite struct BackgroundLoopTests {
    struct Failure: Error, CustomStringConvertible {
        var description: String { "body failed" }
    }

    func makeLoop(
        interval: Duration = .seconds(10), start: BackgroundLoop.Start = .immediately,
        failureBackoff: ClosedRange<Duration>? = nil, clock: TestClock,
        metrics: MetricsRegistry = MetricsRegistry(), logs: CapturingSink = CapturingSink()
    ) -> BackgroundLoop {
        BackgroundLoop(
            name: "test.loop", interval: interval, start: start, failureBackoff: failureBackoff,
            logger: Logger(label: "test", logLevel: .trace, sink: logs), metrics: metrics, clock: clock)
    }

    @Test func runsTheBodyAtStartThenOncePerInterval() async throws {
        let clock = TestClock()
        let loop = makeLoop(clock: clock)
        let count = Tally()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await loop.run { count.add() } }
            #expect(await eventually { clock.sleeping == 1 })
            #expect(count.current == 1)
            #expect(clock.pendingWaits == [.seconds(10)])
            clock.advance(by: .seconds(9))
            await Task.yield()
            #expect(count.current == 1)
            clock.advance(by: .seconds(1))
            #expect(await eventually { count.current == 2 && clock.sleeping == 1 })
            #expect(loop.runs.current == 2)
            loop.stop()
        }
        #expect(clock.sleeping == 0)
        #expect(loop.waiters == 0)
    }

    @Test func startingAfterTheIntervalWaitsFirst() async throws {
        let clock = TestClock()
        let loop = makeLoop(start: .afterInterval, clock: clock)
        let count = Tally()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await loop.run { count.add() } }
            #expect(await eventually { clock.sleeping == 1 })
            #expect(count.current == 0)
            clock.advance(by: .seconds(10))
            #expect(await eventually { count.current == 1 && clock.sleeping == 1 })
            loop.stop()
        }
    }

    /// A stop while the loop waits ends `run` at once: no time passes on the clock.
    @Test func aStopWhileWaitingReturnsAtOnce() async throws {
        let clock = TestClock()
        let loop = makeLoop(interval: .seconds(3600), clock: clock)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await loop.run {} }
            #expect(await eventually { clock.sleeping == 1 && loop.waiters == 1 })
            loop.stop()
        }
        #expect(clock.now.offset == .zero)
        #expect(clock.sleeping == 0)
        #expect(loop.waiters == 0)
    }

    /// A stop while the body runs lets it finish, then ends the loop without another wait.
    @Test func aStopWhileTheBodyRunsLetsItFinish() async throws {
        let clock = TestClock()
        let loop = makeLoop(clock: clock)
        let entered = OneShot<Void>()
        let release = OneShot<Void>()
        let finished = Tally()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                await loop.run {
                    entered.fulfill(())
                    try await release.wait()
                    finished.add()
                }
            }
            try await entered.wait()
            loop.stop()
            release.fulfill(())
        }
        #expect(finished.current == 1)
        #expect(loop.runs.current == 1)
        #expect(clock.sleeping == 0)
    }

    /// Cancelling the task that runs the loop (a service group past its shutdown timeout) ends it
    /// too, and leaves nothing parked.
    @Test func cancellationEndsTheLoop() async throws {
        let clock = TestClock()
        let loop = makeLoop(clock: clock)
        let running = Task { await loop.run {} }
        #expect(await eventually { clock.sleeping == 1 })
        running.cancel()
        await running.value
        #expect(clock.sleeping == 0)
        #expect(loop.waiters == 0)
        #expect(!loop.isStopped)
    }

    /// Failures: logged (warning for the first in a row, debug after), counted, waited out with a
    /// doubling backoff up to its cap; a success resets it.
    @Test func failuresAreLoggedCountedAndBackedOff() async throws {
        let clock = TestClock()
        let metrics = MetricsRegistry()
        let logs = CapturingSink()
        let loop = makeLoop(
            interval: .seconds(60), failureBackoff: .seconds(1)...(.seconds(4)), clock: clock, metrics: metrics,
            logs: logs)
        // Fails four times, succeeds once, then fails again.
        let calls = Tally()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                await loop.run {
                    let call = calls.add()
                    if call != 5 { throw Failure() }
                }
            }
            var waits: [Duration] = []
            for call in 1...6 {
                let waiting = await eventually { calls.current == call && clock.sleeping == 1 }
                guard waiting, let wait = clock.pendingWaits.first else {
                    Issue.record("call \(call) did not reach its wait")
                    break
                }
                waits.append(wait)
                // The sixth wait is only read: ending it would start a seventh call, racing `stop()`.
                if call < 6 { clock.advance(by: wait) }
            }
            #expect(waits == [.seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(60), .seconds(1)])
            loop.stop()
        }
        #expect(loop.failures.current == 5)
        #expect(loop.runs.current == 1)
        let text = metrics.render()
        #expect(text.contains("bk_background_loop_failures_total{loop=\"test.loop\"} 5\n"))
        #expect(text.contains("bk_background_loop_runs_total{loop=\"test.loop\"} 1\n"))
        let levels = logs.captured.filter { $0.contains("background loop failed") }.map { line in
            line.contains("\"level\":\"warning\"") ? "warning" : line.contains("\"level\":\"debug\"") ? "debug" : "?"
        }
        #expect(levels == ["warning", "debug", "debug", "debug", "warning"])
        #expect(logs.captured.allSatisfy { !$0.contains("background loop failed") || $0.contains("body failed") })
    }

    /// A body that answers `.immediately` runs again without waiting; `.after` waits its own time.
    @Test func theBodyPacesTheLoop() async throws {
        let clock = TestClock()
        let loop = makeLoop(interval: .seconds(5), clock: clock)
        let calls = Tally()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                await loop.runPaced({
                    let call = calls.add()
                    return call < 100 ? .immediately : call == 100 ? .after(.seconds(1)) : .interval
                })
            }
            #expect(await eventually { clock.sleeping == 1 })
            #expect(calls.current == 100)
            #expect(clock.pendingWaits == [.seconds(1)])
            clock.advance(by: .seconds(1))
            #expect(await eventually { calls.current == 101 && clock.sleeping == 1 })
            #expect(clock.pendingWaits == [.seconds(5)])
            loop.stop()
        }
    }

    /// The leak this skeleton replaces: a wait per period that outlived its period (a task parked
    /// on the stop signal every 10 s). Thousands of periods later, at most one wait is parked.
    @Test func nothingIsLeftBehindAfterThousandsOfPeriods() async throws {
        let clock = TestClock()
        let loop = makeLoop(interval: .seconds(1), clock: clock)
        let periods = 5000
        var mostWaiters = 0
        var mostSleeping = 0
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await loop.run {} }
            for period in 1...periods {
                let reached = await eventually { loop.runs.current == period && clock.sleeping == 1 }
                guard reached else {
                    Issue.record("period \(period) was not reached")
                    break
                }
                mostWaiters = max(mostWaiters, loop.waiters)
                mostSleeping = max(mostSleeping, clock.sleeping)
                clock.advance(by: .seconds(1))
            }
            loop.stop()
        }
        #expect(loop.runs.current >= periods)
        #expect(mostWaiters <= 1)
        #expect(mostSleeping == 1)
        #expect(loop.waiters == 0)
        #expect(clock.sleeping == 0)
    }

    /// `untilStopped`: the operation is cancelled by a stop, or its result returned.
    @Test func untilStoppedCancelsTheOperationOnStop() async throws {
        let clock = TestClock()
        let loop = makeLoop(clock: clock)
        #expect(try await loop.untilStopped { 42 } == 42)
        let started = OneShot<Void>()
        let wasCancelled = Tally()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                let result = try await loop.untilStopped {
                    started.fulfill(())
                    do {
                        try await clock.sleep(for: .seconds(3600))
                    } catch {
                        wasCancelled.add()
                    }
                    return 1
                }
                #expect(result == nil)
            }
            try await started.wait()
            loop.stop()
        }
        #expect(wasCancelled.current == 1)
        #expect(loop.waiters == 0)
    }

    @Test func backoffDoublesUpToItsCap() {
        let loop = makeLoop(failureBackoff: .milliseconds(100)...(.seconds(5)), clock: TestClock())
        let waits = (1...9).map { loop.backoff(afterFailures: $0) }
        #expect(
            waits == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
                .milliseconds(3200), .seconds(5), .seconds(5), .seconds(5)
            ])
        #expect(loop.backoff(afterFailures: 1_000_000) == .seconds(5))
    }
}
