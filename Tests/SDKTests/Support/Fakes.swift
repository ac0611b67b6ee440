import BuzzKit
import BuzzKitWire
import Foundation
import Synchronization

/// Records every request and answers with `responder` (default: 202 accepted).
///
/// With `autoInstall` (the default) `POST /v1/installations` is answered 201 with the token
/// `bk_inst_<anonymousId>` without reaching the responder, and recorded in `installations`
/// rather than `requests`, so tests about other things need not care about installation tokens.
final class FakeTransport: Transport {
    typealias Responder = @Sendable (TransportRequest, Int) async throws -> TransportResponse

    private let log = Mutex<[TransportRequest]>([])
    private let installLog = Mutex<[TransportRequest]>([])
    private let responder: Mutex<Responder>
    let autoInstall: Bool

    init(autoInstall: Bool = true, _ responder: @escaping Responder = { _, _ in FakeTransport.accepted() }) {
        self.autoInstall = autoInstall
        self.responder = Mutex(responder)
    }

    func respond(_ responder: @escaping Responder) { self.responder.withLock { $0 = responder } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if autoInstall, request.url.path == "/v1/installations" {
            installLog.withLock { $0.append(request) }
            let anonymous = (try? JSONValue.parse(request.body))?["anonymousId"]?.stringValue ?? ""
            return Self.installation(token: "bk_inst_" + anonymous, anonymousId: anonymous)
        }
        let index = log.withLock { log -> Int in
            log.append(request)
            return log.count - 1
        }
        let responder = self.responder.withLock { $0 }
        return try await responder(request, index)
    }

    var requests: [TransportRequest] { log.withLock { $0 } }
    /// The `POST /v1/installations` answered by `autoInstall`.
    var installations: [TransportRequest] { installLog.withLock { $0 } }
    func clear() { log.withLock { $0.removeAll() } }

    /// Requests to `path` (e.g. `/v1/events`), their JSON bodies.
    func bodies(_ path: String) -> [JSONValue] {
        requests.filter { $0.url.path == path }.compactMap { try? JSONValue.parse($0.body) }
    }

    /// The events sent to `/v1/events`, in order.
    var sentEvents: [JSONValue] { bodies("/v1/events").flatMap { $0["events"]?.arrayValue ?? [] } }
    var sentNames: [String] { sentEvents.compactMap { $0["name"]?.stringValue } }

    static func accepted(_ count: Int = 1) -> TransportResponse {
        TransportResponse(
            status: 202,
            body: Envelope.success(["batchId": "b", "accepted": .int(Int64(count))]).encoded(requestId: "r"))
    }

    static func error(_ code: ErrorCode, status: Int) -> TransportResponse {
        TransportResponse(status: status, body: Envelope.failure(APIError(code, "refused")).encoded(requestId: "r"))
    }

    static func error(_ code: String, status: Int) -> TransportResponse {
        error(ErrorCode(code, httpStatus: status), status: status)
    }

    /// `POST /v1/installations`'s 201.
    static func installation(token: String, anonymousId: String) -> TransportResponse {
        TransportResponse(
            status: 201,
            body: Envelope.success([
                "id": "00000000-0000-0000-0000-000000000001", "anonymousId": .string(anonymousId), "subscriberId": nil,
                "token": .string(token), "createdAt": "2026-01-01T00:00:00.000Z"
            ]).encoded(requestId: "r"))
    }
}

struct NetworkDown: Error {}

final class FakeScheduler: NotificationScheduler {
    private let pending = Mutex<[String: LocalNotificationRequest]>([:])

    func schedule(_ request: LocalNotificationRequest) async throws { pending.withLock { $0[request.id] = request } }
    func pendingIdentifiers() async -> [String] { pending.withLock { $0.keys.sorted() } }
    func removePending(ids: [String]) async { pending.withLock { p in for id in ids { p.removeValue(forKey: id) } } }

    var ids: [String] { pending.withLock { $0.keys.sorted() } }
    func request(_ id: String) -> LocalNotificationRequest? { pending.withLock { $0[id] } }
    func add(_ id: String) {
        pending.withLock {
            $0[id] = LocalNotificationRequest(
                id: id, fireAt: .init(year: 2030, month: 1, day: 1, hour: 7, minute: 0),
                title: nil, body: nil, payload: PushPayload(aps: .init(), bk: .init()))
        }
    }
}

final class FakeOpener: DeepLinkOpener {
    private let opened = Mutex<[URL]>([])
    func open(_ url: URL) async { opened.withLock { $0.append(url) } }
    var urls: [URL] { opened.withLock { $0 } }
}

final class FakeLifecycle: PlatformLifecycle {
    private let handler = Mutex<(@Sendable (LifecycleSignal) async -> Void)?>(nil)
    func start(_ handler: @escaping @Sendable (LifecycleSignal) async -> Void) {
        self.handler.withLock { $0 = handler }
    }
    func send(_ signal: LifecycleSignal) async { await handler.withLock { $0 }?(signal) }
}

/// A push source a test drives: `send` reaches the SDK only if it started the source.
final class FakePushSource: PushNotificationSource {
    private let handler = Mutex<(@Sendable (PlatformNotificationEvent) async -> RemoteNotificationOutcome)?>(nil)
    private let starts = Mutex(0)

    func start(_ handler: @escaping @Sendable (PlatformNotificationEvent) async -> RemoteNotificationOutcome) {
        self.handler.withLock { $0 = handler }
        starts.withLock { $0 += 1 }
    }

    /// What the SDK answered; nil when nothing listens (the source was never started).
    func send(_ event: PlatformNotificationEvent) async -> RemoteNotificationOutcome? {
        guard let handler = handler.withLock({ $0 }) else { return nil }
        return await handler(event)
    }

    var startCount: Int { starts.withLock { $0 } }
}

/// A permission a test sets.
final class FakePermissions: NotificationPermissionReader {
    private let value = Mutex<NotificationPermission?>(nil)
    func set(_ permission: NotificationPermission?) { value.withLock { $0 = permission } }
    func currentPermission() async -> NotificationPermission? { value.withLock { $0 } }
}

final class LogCapture: Sendable {
    private let entries = Mutex<[LogEntry]>([])
    var handler: LogHandler { { [self] entry in self.entries.withLock { $0.append(entry) } } }
    var all: [LogEntry] { entries.withLock { $0 } }
    func contains(_ level: LogEntry.Level, _ message: String) -> Bool {
        all.contains { $0.level == level && $0.message.contains(message) }
    }
}

/// A temporary folder removed at the end of the test.
final class TemporaryDirectory: Sendable {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("buzzkit-sdk-" + UUID().uuidString)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// One client on fakes, with everything a test needs to look at.
struct Harness {
    let directory: TemporaryDirectory
    let clock: ManualClock
    let transport: FakeTransport
    let scheduler: FakeScheduler
    let opener: FakeOpener
    let lifecycle: FakeLifecycle
    let pushes: FakePushSource
    let permissions: FakePermissions
    let logs: LogCapture
    let client: BuzzKit

    init(
        directory: TemporaryDirectory = TemporaryDirectory(), clock: ManualClock = ManualClock(),
        transport: FakeTransport = FakeTransport(), scheduler: FakeScheduler = FakeScheduler(),
        permissions: FakePermissions = FakePermissions(),
        configure: (inout BuzzKit.Configuration) -> Void = { _ in }
    ) throws {
        self.directory = directory
        self.clock = clock
        self.transport = transport
        self.scheduler = scheduler
        opener = FakeOpener()
        lifecycle = FakeLifecycle()
        pushes = FakePushSource()
        self.permissions = permissions
        logs = LogCapture()
        var configuration = BuzzKit.Configuration(apiKey: "bk_ck_test", baseURL: URL(string: "http://api.test")!)
        configuration.storageDirectory = directory.url
        configuration.pushEnvironment = .sandbox
        configuration.appVersion = "1.0"
        configuration.appBuild = "1"
        configuration.bundleId = "com.example.app"
        configuration.logHandler = logs.handler
        configure(&configuration)
        client = try BuzzKit(
            configuration: configuration,
            platform: Platform(
                clock: clock, transport: transport, lifecycle: lifecycle,
                notifications: scheduler, opener: opener, pushes: pushes,
                permissions: permissions))
    }

    /// A second client on the same storage (a process restart).
    func restarted(transport: FakeTransport? = nil, configure: (inout BuzzKit.Configuration) -> Void = { _ in }) throws
        -> Harness
    {
        try Harness(
            directory: directory, clock: clock, transport: transport ?? self.transport, scheduler: scheduler,
            permissions: permissions, configure: configure)
    }
}
