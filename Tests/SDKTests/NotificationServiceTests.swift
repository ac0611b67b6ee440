import BuzzKit
import BuzzKitNotificationServiceExtension
import BuzzKitWire
import Foundation
import Testing

@Suite("SDK: the notification service extension")
struct NotificationServiceTests {
    @Test func buttonsBecomeADerivedCategoryWithTextInput() throws {
        let buttons = [
            PushButton(id: "confirm", title: "Confirm", foreground: true),
            PushButton(id: "skip", title: "Skip", destructive: true),
            PushButton(id: "reply", title: "Reply", input: true, placeholder: "Say something")
        ]
        var content = MessageContent()
        content.body = "Booked"
        content.actions = buttons
        let payload = PushPayload(content: content, messageId: "m")
        let spec = try #require(NotificationCategorySpec(payload: payload))
        #expect(spec.id == PushPayload.derivedCategory(for: buttons))
        #expect(spec.id == payload.aps.category)
        #expect(spec.actions.map(\.id) == ["confirm", "skip", "reply"])
        #expect(spec.actions[0].foreground && !spec.actions[0].destructive && !spec.actions[0].textInput)
        #expect(spec.actions[1].destructive)
        #expect(spec.actions[2].textInput && spec.actions[2].placeholder == "Say something")
    }

    @Test func theMessagesOwnCategoryWinsAndNoButtonsMeansNoCategory() throws {
        var content = MessageContent()
        content.body = "x"
        content.category = "booking"
        content.actions = [PushButton(id: "a", title: "A")]
        #expect(NotificationCategorySpec(payload: PushPayload(content: content, messageId: "m"))?.id == "booking")
        content.actions = []
        #expect(NotificationCategorySpec(payload: PushPayload(content: content, messageId: "m")) == nil)
    }

    @Test func theReceiptIsSentWhenTheNetworkAnswers() async throws {
        let app = try Harness()
        await app.client.start()
        app.client.identify("user-1")
        await app.client.flushEvents()  // the identify reached the server
        let extensionTransport = FakeTransport()
        let outcome = await DeliveryReceipt.deliver(
            messageId: "msg_9", storageDirectory: app.directory.url, configuration: nil,
            transport: extensionTransport, clock: app.clock)
        #expect(outcome == .sent)
        #expect(
            extensionTransport.bodies("/v1/events") == [
                [
                    "subscriberId": "user-1",
                    "events": .array([extensionTransport.sentEvents[0]])
                ]
            ])
        #expect(extensionTransport.sentNames == ["$notification.delivered"])
        #expect(extensionTransport.sentEvents.first?["data"] == ["messageId": "msg_9"])
        #expect(extensionTransport.requests.first?.headers["Authorization"] == "Bearer bk_ck_test")
    }

    @Test func beforeTheAppsIdentifyReachedTheServerTheReceiptGoesUnderTheAnonymousId() async throws {
        let app = try Harness(transport: FakeTransport { _, _ in throw NetworkDown() })
        await app.client.start()
        app.client.identify("user-1")
        await app.client.flushEvents()  // offline: the identify is still pending
        let extensionTransport = FakeTransport()
        let outcome = await DeliveryReceipt.deliver(
            messageId: "msg_9", storageDirectory: app.directory.url, configuration: nil,
            transport: extensionTransport, clock: app.clock)
        #expect(outcome == .sent)
        let batch = try #require(extensionTransport.bodies("/v1/events").first)
        #expect(batch["anonymousId"] == .string(app.client.anonymousId))
        #expect(batch["subscriberId"] == nil)
    }

    @Test func unreachableInTimeItIsSavedAndTheAppDeliversItOnItsNextLaunch() async throws {
        let app = try Harness()
        await app.client.start()
        await app.clock.advance(by: 5)  // this launch's own flushes are done
        let hanging = FakeTransport { _, _ in
            try await Task.sleep(nanoseconds: 60_000_000_000)
            throw NetworkDown()
        }
        let clock = ManualClock()
        async let outcome = DeliveryReceipt.deliver(
            messageId: "msg_9", storageDirectory: app.directory.url,
            configuration: nil, transport: hanging, clock: clock, deadline: 5)
        #expect(await eventually { clock.pendingCount == 1 })
        await clock.advance(by: 5)
        #expect(await outcome == .savedForApp)

        let nextLaunch = try app.restarted(transport: FakeTransport())
        await nextLaunch.client.start()
        await nextLaunch.clock.advance(by: 5)
        #expect(nextLaunch.transport.sentNames == ["$notification.delivered"])
        #expect(nextLaunch.transport.bodies("/v1/events").first?["anonymousId"] == .string(app.client.anonymousId))
    }

    @Test func aNetworkFailureAlsoLeavesItForTheApp() async throws {
        let app = try Harness()
        await app.client.start()
        await app.clock.advance(by: 5)
        let outcome = await DeliveryReceipt.deliver(
            messageId: "m", storageDirectory: app.directory.url,
            configuration: nil, transport: FakeTransport { _, _ in throw NetworkDown() },
            clock: app.clock)
        #expect(outcome == .savedForApp)
        #expect(await app.client.pendingEventCount() == 1)
    }

    @Test func withoutAnyAPIKeyTheReceiptIsDropped() async throws {
        let directory = TemporaryDirectory()
        let outcome = await DeliveryReceipt.deliver(
            messageId: "m", storageDirectory: directory.url, configuration: nil,
            transport: FakeTransport())
        #expect(outcome == .dropped)
    }
}
