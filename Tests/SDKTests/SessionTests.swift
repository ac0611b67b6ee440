import BuzzKit
import BuzzKitWire
import Foundation
import Testing

@Suite("SDK: sessions and reserved app events")
struct SessionTests {
    func names(_ h: Harness) async -> [String] {
        await h.client.flushEvents()
        return h.transport.sentNames
    }

    @Test func foregroundOpensAndBackgroundEmitsBackgrounded() async throws {
        let h = try Harness()
        await h.lifecycle.send(.foreground)  // not started: nothing listens
        await h.client.start()
        await h.client.waitForPendingWrites()
        await h.client.flushEvents()
        h.transport.clear()
        await h.lifecycle.send(.foreground)
        await h.clock.advance(by: 60)
        await h.lifecycle.send(.background)
        #expect(await names(h) == ["$app.opened", "$app.backgrounded"])
    }

    /// (seconds away, whether the old session is closed)
    @Test(arguments: [(5.0, false), (30.0, false), (30.5, true), (3600.0, true)])
    func returningWithin30SecondsResumesLaterEndsTheSession(away: Double, closes: Bool) async throws {
        let h = try Harness()
        await h.client.handle(.foreground)
        let start = h.clock.now()
        await h.clock.advance(by: 100)
        await h.client.handle(.background)
        let backgroundAt = h.clock.now()
        await h.clock.advance(by: away)
        await h.client.handle(.foreground)
        let events = await { () async -> [JSONValue] in
            await h.client.flushEvents()
            return h.transport.sentEvents
        }()
        let names = events.compactMap { $0["name"]?.stringValue }
        if closes {
            #expect(names == ["$app.opened", "$app.backgrounded", "$session.ended", "$app.opened"])
            let ended = events[2]
            #expect(ended["data"] == ["durationSec": 100])
            #expect(ended["timestamp"]?.stringValue == EventTimestamp.format(backgroundAt))
            #expect(events[3]["timestamp"]?.stringValue == EventTimestamp.format(h.clock.now()))
        } else {
            #expect(names == ["$app.opened", "$app.backgrounded"])
        }
        _ = start
    }

    @Test func aResumedSessionCountsItsWholeDurationWhenItEnds() async throws {
        let h = try Harness()
        await h.client.handle(.foreground)
        await h.clock.advance(by: 40)
        await h.client.handle(.background)
        await h.clock.advance(by: 10)
        await h.client.handle(.foreground)  // resumed
        await h.clock.advance(by: 50)
        await h.client.handle(.background)
        await h.clock.advance(by: 120)
        await h.client.handle(.foreground)
        await h.client.flushEvents()
        let ended = h.transport.sentEvents.filter { $0["name"] == "$session.ended" }
        #expect(ended.count == 1)
        #expect(ended.first?["data"]?["durationSec"] == 100)
    }

    @Test func aSessionBackgroundedBeforeAProcessRestartIsClosedOnTheNextLaunch() async throws {
        let first = try Harness()
        await first.client.handle(.foreground)
        await first.clock.advance(by: 20)
        await first.client.handle(.background)
        await first.client.flushEvents()
        let second = try first.restarted(transport: FakeTransport())
        await second.clock.advance(by: 600)
        await second.client.handle(.foreground)
        await second.client.flushEvents()
        #expect(second.transport.sentNames == ["$session.ended", "$app.opened"])
        #expect(second.transport.sentEvents.first?["data"] == ["durationSec": 20])
    }

    @Test func aSessionKilledInTheForegroundIsClosedAtItsLastHeartbeatOnTheNextLaunch() async throws {
        let first = try Harness()
        await first.client.handle(.foreground)
        let start = first.clock.now()
        await first.clock.advance(by: 25)  // heartbeats at +10 and +20
        await first.client.flushEvents()
        // The process dies here: no background signal. The next launch, ten minutes later.
        let second = try Harness(directory: first.directory, clock: ManualClock(start: start.addingTimeInterval(600)))
        await second.client.handle(.foreground)
        await second.client.flushEvents()
        let events = second.transport.sentEvents
        #expect(events.compactMap { $0["name"]?.stringValue } == ["$session.ended", "$app.opened"])
        #expect(events.first?["data"] == ["durationSec": 20])
        #expect(events.first?["timestamp"]?.stringValue == EventTimestamp.format(start.addingTimeInterval(20)))
        #expect(events.last?["timestamp"]?.stringValue == EventTimestamp.format(start.addingTimeInterval(600)))
    }

    @Test func aProcessKilledInTheForegroundAndRelaunchedWithin30SecondsResumes() async throws {
        let first = try Harness()
        await first.client.handle(.foreground)
        let start = first.clock.now()
        await first.clock.advance(by: 15)  // a heartbeat at +10
        await first.client.flushEvents()
        let second = try Harness(directory: first.directory, clock: ManualClock(start: start.addingTimeInterval(35)))
        await second.client.handle(.foreground)
        await second.clock.advance(by: 40)
        await second.client.handle(.background)
        await second.clock.advance(by: 100)
        await second.client.handle(.foreground)
        await second.client.flushEvents()
        let events = second.transport.sentEvents
        #expect(events.compactMap { $0["name"]?.stringValue } == ["$app.backgrounded", "$session.ended", "$app.opened"])
        // one session: from the first launch's start to the background
        #expect(events[1]["data"] == ["durationSec": 75])
    }

    @Test func automaticSessionTrackingOffEmitsNoneOfTheThree() async throws {
        let h = try Harness { $0.automaticSessionTracking = false }
        await h.client.handle(.foreground)
        await h.clock.advance(by: 10)
        await h.client.handle(.background)
        await h.clock.advance(by: 100)
        await h.client.handle(.foreground)
        await h.client.handle(.background)
        await h.client.flushEvents()
        #expect(h.transport.sentNames.isEmpty)
    }

    @Test func installedOnFirstLaunchNothingOnTheSameVersionUpdatedOnANewOne() async throws {
        let first = try Harness()
        await first.client.start()
        await first.client.flushEvents()
        #expect(first.transport.sentNames == ["$app.installed"])
        #expect(first.transport.sentEvents.first?["data"] == ["version": "1.0", "build": "1"])

        let same = try first.restarted(transport: FakeTransport())
        await same.client.start()
        await same.client.flushEvents()
        #expect(same.transport.sentNames.isEmpty)

        let updated = try first.restarted(transport: FakeTransport()) { $0.appBuild = "2" }
        await updated.client.start()
        await updated.client.flushEvents()
        #expect(updated.transport.sentNames == ["$app.updated"])
        #expect(
            updated.transport.sentEvents.first?["data"] == [
                "fromVersion": "1.0", "toVersion": "1.0", "fromBuild": "1", "toBuild": "2"
            ])
    }

    @Test func everyReservedEventTheSDKSendsPassesTheServersValidation() async throws {
        let h = try Harness()
        await h.client.start()
        await h.client.handle(.foreground)
        await h.client.handle(.background)
        await h.clock.advance(by: 100)
        await h.client.handle(.foreground)
        h.client.permissionChanged(.authorized)
        await h.client.flushEvents()
        for body in h.transport.bodies("/v1/events") {
            guard case .success = EventBatch.validate(body, now: h.clock.now()) else {
                Issue.record("rejected: \(body)")
                continue
            }
        }
        #expect(h.transport.sentNames.count == 6)
    }
}
