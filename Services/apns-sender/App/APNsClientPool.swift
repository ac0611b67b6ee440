import BuzzKitAPNs
import BuzzKitCore
import BuzzKitRedis
import Foundation
import Synchronization

/// One `APNsClient` (HTTP/2, many streams per connection) per (team, environment), made on first
/// use and shared by every chunk of this replica; JWTs come from one shared token cache.
///
/// A `Service` listed before the consumers that send through it: the group stops it only after
/// their `run()`s returned (every in-flight chunk sent, recorded and acked), and then its `run()`
/// closes the connections.
final class APNsClientPool: Service {
    let name = "apns-clients"
    private let stopped = OneShot<Void>()
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

    /// Waits for `shutdown()` (or cancellation), then closes every client.
    func run() async throws {
        await withTaskCancellationHandler {
            await stopped.value
        } onCancel: {
            stopped.fulfill(())
        }
        await closeClients()
    }

    func shutdown() async { stopped.fulfill(()) }

    private func closeClients() async {
        let all = clients.withLock { clients -> [APNsClient] in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all { await client.shutdown() }
    }
}
