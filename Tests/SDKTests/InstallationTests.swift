import BuzzKit
import BuzzKitNotificationServiceExtension
import BuzzKitWire
import Foundation
import Synchronization
import Testing

@Suite("SDK: installation tokens (client keys)")
struct InstallationTests {
    static let header = "BuzzKit-Installation"

    /// Answers `/v1/installations` with `tokens` in turn, everything else with `other`.
    static func server(
        tokens: [String],
        other: @escaping @Sendable (TransportRequest) -> TransportResponse = { _ in FakeTransport.accepted() }
    )
        -> FakeTransport
    {
        let issued = Mutex(0)
        return FakeTransport(autoInstall: false) { request, _ in
            guard request.url.path == "/v1/installations" else { return other(request) }
            let n = issued.withLock { n -> Int in
                defer { n += 1 }
                return n
            }
            let anonymous = (try? JSONValue.parse(request.body))?["anonymousId"]?.stringValue ?? ""
            return FakeTransport.installation(token: tokens[min(n, tokens.count - 1)], anonymousId: anonymous)
        }
    }

    func paths(_ transport: FakeTransport) -> [String] { transport.requests.map { "\($0.method) \($0.url.path)" } }

    @Test func registersLazilyBeforeTheFirstRequestThenSendsTheHeaderOnEveryOne() async throws {
        let transport = Self.server(tokens: ["bk_inst_one"])
        let h = try Harness(transport: transport)
        h.client.track("a")
        #expect(await h.client.pendingEventCount() == 1)
        #expect(transport.requests.isEmpty)
        await h.client.flushEvents()
        #expect(paths(transport) == ["POST /v1/installations", "POST /v1/events"])
        let registration = transport.requests[0]
        #expect(try JSONValue.parse(registration.body) == ["anonymousId": .string(h.client.anonymousId)])
        #expect(registration.headers["Authorization"] == "Bearer bk_ck_test")
        #expect(registration.headers[Self.header] == nil)
        #expect(transport.requests[1].headers[Self.header] == "bk_inst_one")
        h.client.identify("user-1")
        h.client.track("b")
        await h.client.registerDeviceToken([0x01])
        await h.client.flushEvents()
        #expect(paths(transport).filter { $0 == "POST /v1/installations" }.count == 1)
        #expect(transport.requests.dropFirst().allSatisfy { $0.headers[Self.header] == "bk_inst_one" })
        #expect(
            Set(paths(transport)) == [
                "POST /v1/installations", "POST /v1/events", "POST /v1/identify",
                "PUT /v1/subscribers/user-1/devices/01"
            ])
    }

    @Test func theTokenIsKeptInTheStoreAcrossRestarts() async throws {
        let first = try Harness(transport: Self.server(tokens: ["bk_inst_kept"]))
        first.client.track("a")
        await first.client.flushEvents()
        let transport = Self.server(tokens: ["bk_inst_other"])
        let second = try first.restarted(transport: transport)
        second.client.track("b")
        await second.client.flushEvents()
        #expect(paths(transport) == ["POST /v1/events"])
        #expect(transport.requests[0].headers[Self.header] == "bk_inst_kept")
    }

    @Test func resetRegistersANewInstallationAndEventsQueuedBeforeGoWithTheOldOne() async throws {
        let h = try Harness()  // tokens are bk_inst_<anonymousId>
        let before = h.client.anonymousId
        h.client.identify("user-1")
        await h.client.flushEvents()
        h.client.track("logged.out")
        h.client.reset()
        h.client.track("browsing")
        await h.client.flushEvents()
        let after = h.client.anonymousId
        #expect(before != after)
        #expect(
            h.transport.installations.compactMap { try? JSONValue.parse($0.body)["anonymousId"]?.stringValue } == [
                before, after
            ])
        let batches = h.transport.requests.filter { $0.url.path == "/v1/events" }
        #expect(batches.count == 2)
        #expect(try JSONValue.parse(batches[0].body)["subscriberId"] == "user-1")
        #expect(batches[0].headers[Self.header] == "bk_inst_" + before)
        #expect(try JSONValue.parse(batches[1].body)["anonymousId"] == .string(after))
        #expect(batches[1].headers[Self.header] == "bk_inst_" + after)
    }

    @Test(arguments: ["installation_required", "unauthorized"])
    func aRefusedTokenIsDroppedAndTheInstallationRegisteredAgainOnce(code: String) async throws {
        let transport = Self.server(tokens: ["bk_inst_old", "bk_inst_new"]) { request in
            request.headers[Self.header] == "bk_inst_new"
                ? FakeTransport.accepted() : FakeTransport.error(code, status: 401)
        }
        let h = try Harness(transport: transport)
        h.client.track("a")
        await h.client.flushEvents()
        #expect(
            paths(transport) == [
                "POST /v1/installations", "POST /v1/events", "POST /v1/installations", "POST /v1/events"
            ])
        #expect(await h.client.pendingEventCount() == 0)
        let later = Self.server(tokens: ["bk_inst_unused"])
        let restarted = try h.restarted(transport: later)
        restarted.client.track("b")
        await restarted.client.flushEvents()
        #expect(later.requests.map(\.url.path) == ["/v1/events"])
        #expect(later.requests[0].headers[Self.header] == "bk_inst_new")
    }

    @Test func aNewInstallationForAnIdentifiedDeviceIsIdentifiedAgainBeforeItsEvents() async throws {
        let transport = Self.server(tokens: ["bk_inst_old", "bk_inst_new"]) { request in
            request.url.path == "/v1/events" && request.headers[Self.header] == "bk_inst_old"
                ? FakeTransport.error("unauthorized", status: 401) : FakeTransport.accepted()
        }
        let h = try Harness(transport: transport)
        h.client.identify("user-1")
        h.client.track("a")
        await h.client.flushEvents()
        #expect(
            paths(transport) == [
                "POST /v1/installations", "POST /v1/identify", "POST /v1/events",
                "POST /v1/installations", "POST /v1/identify", "POST /v1/events"
            ])
        let again = transport.requests[4]
        #expect(again.headers[Self.header] == "bk_inst_new")
        #expect(
            try JSONValue.parse(again.body) == ["anonymousId": .string(h.client.anonymousId), "subscriberId": "user-1"])
    }

    @Test func aServerThatKeepsRefusingGetsOneNewRegistrationNotALoop() async throws {
        let transport = Self.server(tokens: ["bk_inst_1", "bk_inst_2", "bk_inst_3"]) { _ in
            FakeTransport.error("installation_required", status: 401)
        }
        let h = try Harness(transport: transport)
        h.client.track("a")
        await h.client.flushEvents()
        #expect(
            paths(transport) == [
                "POST /v1/installations", "POST /v1/events", "POST /v1/installations", "POST /v1/events"
            ])
        #expect(await h.client.pendingEventCount() == 0)  // an API error: dropped, logged
        #expect(h.logs.contains(.error, "rejected by the API and dropped"))
    }

    @Test func aNetworkFailureWhileRegisteringKeepsTheEventsForTheRetry() async throws {
        let transport = FakeTransport(autoInstall: false) { _, _ in throw NetworkDown() }
        let h = try Harness(transport: transport)
        h.client.track("a")
        await h.client.flushEvents()
        #expect(paths(transport) == ["POST /v1/installations"])
        #expect(await h.client.pendingEventCount() == 1)
        transport.respond { request, _ in
            request.url.path == "/v1/installations"
                ? FakeTransport.installation(token: "bk_inst_late", anonymousId: "x")
                : FakeTransport.accepted()
        }
        await h.client.flushEvents()
        #expect(await h.client.pendingEventCount() == 0)
        #expect(transport.requests.last?.headers[Self.header] == "bk_inst_late")
    }

    @Test func aServerWithoutInstallationsIsSentToWithoutTheHeader() async throws {
        let transport = FakeTransport(autoInstall: false) { request, _ in
            request.url.path == "/v1/installations"
                ? FakeTransport.error(.notFound, status: 404) : FakeTransport.accepted()
        }
        let h = try Harness(transport: transport)
        h.client.track("a")
        await h.client.flushEvents()
        h.client.track("b")
        await h.client.flushEvents()
        #expect(paths(transport) == ["POST /v1/installations", "POST /v1/events", "POST /v1/events"])
        #expect(transport.requests.allSatisfy { $0.headers[Self.header] == nil })
        #expect(h.transport.sentNames == ["a", "b"])
    }

    @Test func keysOtherThanClientKeysNeverRegister() async throws {
        let transport = FakeTransport(autoInstall: false)
        let h = try Harness(transport: transport) { $0.apiKey = "bk_tk_server" }
        h.client.track("a")
        await h.client.flushEvents()
        #expect(paths(transport) == ["POST /v1/events"])
        #expect(transport.requests[0].headers[Self.header] == nil)
    }

    @Test func theExtensionRegistersWhenTheAppHasNotAndTheAppAdoptsItsToken() async throws {
        let app = try Harness(transport: FakeTransport(autoInstall: false))
        await app.client.start()
        await app.client.waitForPendingWrites()
        let extensionTransport = FakeTransport()
        let outcome = await DeliveryReceipt.deliver(
            messageId: "m", storageDirectory: app.directory.url, configuration: nil,
            transport: extensionTransport, clock: app.clock)
        #expect(outcome == .sent)
        #expect(extensionTransport.installations.count == 1)
        #expect(extensionTransport.requests.first?.headers[Self.header] == "bk_inst_" + app.client.anonymousId)
        await app.client.flushEvents()
        #expect(paths(app.transport) == ["POST /v1/events"])  // no registration of its own
        #expect(app.transport.requests.first?.headers[Self.header] == "bk_inst_" + app.client.anonymousId)
    }

    @Test func aRegistrationRaceLostToTheExtensionAdoptsTheStoredToken() async throws {
        let directory = TemporaryDirectory()
        let holder = Mutex<Harness?>(nil)
        // The server says 409: the extension registered this anonymous id a moment ago and stored
        // its token in the shared store (simulated by storing it from the responder).
        let transport = FakeTransport(autoInstall: false) { request, _ in
            guard request.url.path == "/v1/installations" else { return FakeTransport.accepted() }
            if let app = holder.withLock({ $0 }) {
                _ = await DeliveryReceipt.deliver(
                    messageId: "m", storageDirectory: app.directory.url, configuration: nil,
                    transport: FakeTransport())
            }
            return FakeTransport.error("installation_exists", status: 409)
        }
        let app = try Harness(directory: directory, transport: transport)
        holder.withLock { $0 = app }
        await app.client.start()  // stores the API settings the extension reads
        app.client.track("a")
        await app.client.flushEvents()
        let events = app.transport.requests.filter { $0.url.path == "/v1/events" }
        #expect(events.count == 1)
        #expect(events.first?.headers[Self.header] == "bk_inst_" + app.client.anonymousId)
        #expect(await app.client.pendingEventCount() == 0)
    }
}
