import BuzzKit
import BuzzKitWire
import Foundation
import Testing

@Suite("SDK: notification permission changes")
struct PermissionTests {
    func permissionEvents(_ h: Harness) async -> [JSONValue] {
        await h.client.flushEvents()
        return h.transport.sentEvents.filter { $0["name"] == "$permission.changed" }.compactMap { $0["data"] }
    }

    @Test func aChangeSeenOnReturningToTheForegroundIsReportedOnce() async throws {
        let h = try Harness { $0.automaticSessionTracking = false }
        h.permissions.set(.unknown)
        await h.client.start()  // the first reading is only recorded
        #expect(await permissionEvents(h).isEmpty)
        await h.client.registerDeviceToken([0x0A])
        h.permissions.set(.authorized)  // the person answered the prompt
        await h.lifecycle.send(.foreground)
        await h.lifecycle.send(.foreground)
        #expect(await permissionEvents(h) == [["status": "authorized"]])
        let puts = h.transport.requests.filter { $0.method == "PUT" }
        #expect(try puts.last.map { try JSONValue.parse($0.body)["permission"] } == "authorized")
    }

    @Test func aChangeWhileTheAppWasNotRunningIsReportedAtTheNextLaunch() async throws {
        let first = try Harness()
        first.permissions.set(.authorized)
        await first.client.start()
        let same = try first.restarted(transport: FakeTransport())
        await same.client.start()
        #expect(await permissionEvents(same).isEmpty)
        first.permissions.set(.denied)  // turned off in Settings
        let next = try first.restarted(transport: FakeTransport())
        await next.client.start()
        #expect(await permissionEvents(next) == [["status": "denied"]])
    }

    @Test func aPlatformThatCannotTellReportsNothing() async throws {
        let h = try Harness()
        await h.client.start()
        await h.client.handle(.foreground)
        #expect(await permissionEvents(h).isEmpty)
    }

    @Test func anActionsDataIsAlsoAFoundationDictionary() throws {
        let action = PushAction(name: "show_offer", data: ["offerId": "o_1", "count": 2, "tags": ["a"]])
        let any = action.anyValue
        #expect(any["offerId"] as? String == "o_1")
        #expect(any["count"] as? Int64 == 2)
        #expect(any["tags"] as? [Any] != nil)
    }
}
