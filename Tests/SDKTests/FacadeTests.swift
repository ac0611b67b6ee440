import BuzzKit
import BuzzKitWire
import Foundation
import Testing

/// The static facade is process-wide: this is the only test that configures it.
@Suite("SDK: the static facade")
struct FacadeTests {
    @Test func configureBacksTheStaticCallsWithOneInstance() async throws {
        let directory = TemporaryDirectory()
        let transport = FakeTransport()
        let log = CallLog()
        BuzzKit.onDeepLink { url in log.add("handler \(url.absoluteString)") }  // before configure
        BuzzKit.actions.register("start_workout") { action in log.add("action \(action.name)") }
        var configuration = BuzzKit.Configuration(apiKey: "bk_ck_facade", baseURL: URL(string: "http://api.test/")!)
        configuration.storageDirectory = directory.url
        configuration.appVersion = "2.0"
        configuration.appBuild = "7"
        BuzzKit.configure(configuration, platform: Platform(clock: ManualClock(), transport: transport))
        // ignored
        BuzzKit.configure(configuration, platform: Platform(clock: ManualClock(), transport: FakeTransport()))
        let shared = try #require(BuzzKit.shared)
        #expect(shared.actions === BuzzKit.actions)
        #expect(BuzzKit.activities === shared.activities)
        BuzzKit.track("workout.completed", data: ["duration": 42])
        BuzzKit.identify("user-1")
        BuzzKit.track("after.identify")
        let content = MessageContent(body: "Go", deepLink: "gym://w", action: PushAction(name: "start_workout"))
        let payload = PushPayload(content: content, messageId: "m1")
        await shared.notificationOpened(payload, actionIdentifier: nil)
        #expect(log.all == ["action start_workout", "handler gym://w"])
        await BuzzKit.flushEvents()
        #expect(transport.sentNames.contains("workout.completed"))
        #expect(transport.sentNames.contains("after.identify"))
        #expect(transport.requests.allSatisfy { $0.url.absoluteString.hasPrefix("http://api.test/v1/") })
    }
}
