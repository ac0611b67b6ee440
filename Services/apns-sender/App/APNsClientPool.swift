import BuzzKitAPNs
import BuzzKitCore
import BuzzKitRedis
import Foundation
import Synchronization

/// One `APNsClient` (HTTP/2, many streams per connection) per (team, environment), made on first
/// use and shared by every chunk of this replica; JWTs come from one shared token cache.
final class APNsClientPool: Sendable {
    private let configuration: SenderConfiguration
    private let tokenCache = APNsTokenCache()
    private let logger: Logger
    private let clients = Mutex<[String: APNsClient]>([:])

    init(configuration: SenderConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    func client(team: String, environment: APNsEnvironment) throws -> APNsClient {
        let key = team + "|" + environment.rawValue
        return try clients.withLock { clients in
            if let client = clients[key] { return client }
            var settings = APNsClient.Configuration(environment: environment, baseURL: configuration.baseURL(environment),
                                                    caFile: configuration.caFile, requestTimeout: configuration.requestTimeout)
            settings.tcpNoDelay = configuration.tcpNoDelay
            let client = try APNsClient(configuration: settings, tokenCache: tokenCache, logger: logger)
            clients[key] = client
            return client
        }
    }

    func shutdown() async {
        let all = clients.withLock { clients -> [APNsClient] in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all { await client.shutdown() }
    }
}

/// The sender's long-lived parts as one service, so the order of a graceful stop is exact:
/// `shutdown()` stops the consumers from reading (and the sweeper); `run()` returns only after
/// every consumer finished its in-flight chunks (sent, recorded, acked), and closes the APNs
/// connections last. (`ServiceGroup` awaits `shutdown()`s in turn, but a consumer's returns at
/// once, so separate services could close the clients under a chunk still sending.)
struct SenderPipeline: Service {
    let name = "apns-sender"
    let consumers: [StreamConsumer]
    let sweeper: OutboxSweeper
    let pool: APNsClientPool

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            for consumer in consumers { group.addTask { await consumer.run() } }
            group.addTask { try? await sweeper.run() }
            await group.waitForAll()
        }
        await pool.shutdown()
    }

    func shutdown() async {
        for consumer in consumers { consumer.stop() }
        await sweeper.shutdown()
    }
}
