import BuzzKit
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Synchronization

/// A phone running the app: the real SDK core (`BuzzKit`) against a `PushStack`'s gateway with
/// its client key, identified as a subscriber and registered with a device token, so pushes the
/// stack sends to it land in the APNs simulator under that token. What iOS would do is done by
/// hand: a test hands the simulator's recorded payloads to `client` as `userInfo`; local
/// notifications go to `scheduler` (UserNotifications' stand-in); `network` cuts the connection.
final class SDKDevice: Sendable {
    let client: BuzzKit
    let scheduler: RecordingNotificationCenter
    let network: SwitchableNetwork
    let token: String
    private let directory: URL

    private init(
        client: BuzzKit, scheduler: RecordingNotificationCenter, network: SwitchableNetwork, token: String,
        directory: URL
    ) {
        self.client = client
        self.scheduler = scheduler
        self.network = network
        self.token = token
        self.directory = directory
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// A configured SDK identified as `subscriber` (who must exist) with a new device token,
    /// registered through the gateway; waits until the device row is there.
    static func launch(on stack: PushStack, as subscriber: String) async throws -> SDKDevice {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            TestEnvironment.uniqueName("sdk-device"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = Configuration(
            apiKey: stack.clientKey, baseURL: URL(string: stack.gatewayURL)!, automaticSessionTracking: false)
        configuration.storageDirectory = directory
        configuration.pushEnvironment = .sandbox
        configuration.bundleId = PushStack.bundleId
        let scheduler = RecordingNotificationCenter()
        let network = SwitchableNetwork(URLSessionTransport(timeout: 10))
        let client = try BuzzKit(
            configuration: configuration,
            platform: Platform(transport: network, notifications: scheduler))
        client.identify(subscriber)
        await client.flushEvents()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255) }
        await client.registerDeviceToken(bytes)
        let token = Hex.string(bytes)
        let registered = try await RedisTestSupport.eventually(limit: .seconds(10)) {
            try await !stack.postgres.query(
                "SELECT 1 FROM devices WHERE token = $1 AND subscriber_id = $2 AND active", [token, subscriber]
            ).isEmpty
        }
        guard registered else { throw StackError(description: "the SDK's device \(token) never registered") }
        return SDKDevice(client: client, scheduler: scheduler, network: network, token: token, directory: directory)
    }

    /// What iOS does with a silent push for a running app: `didReceiveRemoteNotification` with
    /// the payload as `userInfo`.
    func receive(_ push: RecordedPush) async -> RemoteNotificationOutcome {
        guard let userInfo = push.payload.propertyList as? [String: Any] else { return .noData }
        return await client.didReceiveRemoteNotification(userInfo: userInfo)
    }

    /// The person taps a notification showing `payload` (a pushed one or a local one).
    func open(_ payload: JSONValue) async {
        guard let userInfo = payload.propertyList as? [String: Any] else { return }
        await client.notificationOpened(userInfo: userInfo, actionIdentifier: nil)
    }
}

/// UserNotifications' pending requests, kept in memory: what the SDK scheduled and removed.
final class RecordingNotificationCenter: NotificationScheduler {
    private let requests = Mutex<[String: LocalNotificationRequest]>([:])

    func schedule(_ request: LocalNotificationRequest) async throws { requests.withLock { $0[request.id] = request } }
    func pendingIdentifiers() async -> [String] { pending.map(\.id) }
    func removePending(ids: [String]) async { requests.withLock { r in for id in ids { r[id] = nil } } }

    /// Pending requests by id.
    var pending: [LocalNotificationRequest] { requests.withLock { $0.values.sorted { $0.id < $1.id } } }
}

/// The device's network: the real transport while `online`, a connection error otherwise.
final class SwitchableNetwork: Transport {
    private let inner: any Transport
    private let up = Mutex(true)

    init(_ inner: any Transport) { self.inner = inner }

    var online: Bool {
        get { up.withLock { $0 } }
        set { up.withLock { $0 = newValue } }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard online else { throw TransportError("the device is offline") }
        return try await inner.send(request)
    }
}

/// One push the APNs simulator accepted: its HTTP/2 headers and decoded payload.
struct RecordedPush: Sendable {
    var headers: [String: String]
    var payload: JSONValue

    init(_ recorded: JSONValue) {
        var headers: [String: String] = [:]
        for (name, value) in recorded["headers"]?.objectValue ?? [:] { headers[name] = value.stringValue }
        self.headers = headers
        payload = recorded["payload"]?.stringValue.flatMap { try? JSONValue.parse(Array($0.utf8)) } ?? .null
    }

    /// `content-available` and nothing shown: a plan or a cancel.
    var isSilent: Bool { payload["aps"] == ["content-available": 1] }
}
