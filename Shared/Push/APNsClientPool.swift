import BuzzKitAPNs
import BuzzKitCore
import BuzzKitHTTP2
import Foundation
import Synchronization

/// One `APNsClient` (HTTP/2, many streams per connection) per (team, environment), made on first
/// use and shared by everything that sends from this process; JWTs come from one shared token
/// cache. Every client's connections live on ONE event-loop thread of the pool's
/// (`HTTP2EventLoop`), made with the first client. The apns-sender and the liveactivity service
/// each hold one.
///
/// A `Service` listed before the consumers that send through it: the group stops it only after
/// their `run()`s returned (everything in flight sent, recorded and acked), and then its `run()`
/// closes the connections.
public final class APNsClientPool: Service {
    public let name = "apns-clients"
    private let stopped = OneShot<Void>()
    /// Where and how the clients connect.
    public struct Settings: Sendable {
        /// APNs host for sandbox tokens. Default Apple's.
        public var sandboxURL: String
        /// APNs host for production tokens. Default Apple's.
        public var productionURL: String
        /// A CA to trust instead of the system store (the simulator's `ca.pem`). Default nil.
        public var caFile: String?
        /// Limit for one attempt. Default 10 s.
        public var requestTimeout: Duration
        /// TCP_NODELAY on the connections. Default true.
        public var tcpNoDelay: Bool
        /// Most connections per team and environment. Default 2.
        public var maxConnections: Int = 2

        public init(
            sandboxURL: String = APNsEnvironment.sandbox.defaultBaseURL,
            productionURL: String = APNsEnvironment.production.defaultBaseURL, caFile: String? = nil,
            requestTimeout: Duration = .seconds(10), tcpNoDelay: Bool = true
        ) {
            self.sandboxURL = sandboxURL
            self.productionURL = productionURL
            self.caFile = caFile
            self.requestTimeout = requestTimeout
            self.tcpNoDelay = tcpNoDelay
        }

        public func baseURL(_ environment: APNsEnvironment) -> String {
            environment == .sandbox ? sandboxURL : productionURL
        }
    }

    private let settings: Settings
    private let tokenCache = APNsTokenCache()
    private let logger: Logger
    private let clients = Mutex<[String: APNsClient]>([:])
    /// The connections' thread, made with the first nghttp2 client.
    private let loop = Mutex<HTTP2EventLoop?>(nil)

    public init(settings: Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    public func client(team: String, environment: APNsEnvironment) throws -> APNsClient {
        let key = team + "|" + environment.rawValue
        return try clients.withLock { clients in
            if let client = clients[key] { return client }
            var configuration = APNsClient.Configuration(
                environment: environment, baseURL: settings.baseURL(environment),
                caFile: settings.caFile, requestTimeout: settings.requestTimeout)
            configuration.tcpNoDelay = settings.tcpNoDelay
            configuration.maxConnections = settings.maxConnections
            let client = try APNsClient(
                configuration: configuration, tokenCache: tokenCache, logger: logger,
                eventLoop: try eventLoop())
            clients[key] = client
            return client
        }
    }

    /// Waits for `shutdown()` (or cancellation), then closes every client.
    public func run() async throws {
        _ = try? await stopped.wait()
        await closeClients()
    }

    public func shutdown() async { stopped.fulfill(()) }

    private func closeClients() async {
        let all = clients.withLock { clients -> [APNsClient] in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all { await client.shutdown() }
        let loop = self.loop.withLock { loop -> HTTP2EventLoop? in
            defer { loop = nil }
            return loop
        }
        await loop?.shutdown()
    }

    private func eventLoop() throws -> HTTP2EventLoop {
        try loop.withLock { loop in
            if let loop { return loop }
            let made = try HTTP2EventLoop(name: "bk-apns-h2", logger: logger)
            loop = made
            return made
        }
    }
}
