import BuzzKitAPNs
import BuzzKitCrypto
import BuzzKitTestSupport
import BuzzKitWire
import Foundation

/// The shared test simulator (`APNsSimulator` in Tests/Support) with a fresh provider key, and an
/// `APNsClient` pointed at it.
final class APNsSimulatorProcess: Sendable {
    let simulator: APNsSimulator
    let credentials: APNsCredentials

    /// Starts the simulator with a fresh provider key (team `TEAM000001`, key id random).
    init(teamId: String = "TEAM000001") async throws {
        let key = ES256PrivateKey.generate()
        let keyId = String(TestEnvironment.uniqueName("K").suffix(10)).uppercased()
        credentials = try APNsCredentials(teamId: teamId, keyId: keyId, privateKey: key)
        simulator = try await APNsSimulator(keyId: keyId, teamId: teamId, publicKeyPEM: key.publicKeyPEM)
    }

    var baseURL: String { simulator.baseURL }
    var caFile: String { simulator.caFile }

    /// An APNs client pointed at this simulator; `configure` adjusts its configuration.
    func makeClient(
        tokenCache: APNsTokenCache = APNsTokenCache(), maxConcurrentStreams: Int = 1000,
        configure: (inout APNsClient.Configuration) -> Void = { _ in }
    ) throws -> APNsClient {
        var configuration = APNsClient.Configuration(
            environment: .sandbox, baseURL: baseURL, caFile: caFile, maxConcurrentStreams: maxConcurrentStreams)
        configure(&configuration)
        return try APNsClient(configuration: configuration, tokenCache: tokenCache, logger: .silent())
    }

    @discardableResult
    func post(_ path: String, _ body: JSONValue = [:]) async throws -> JSONValue {
        try await simulator.post(path, body)
    }
    func pushes(token: String) async throws -> [JSONValue] { try await simulator.pushes(token: token) }
    func stats() async throws -> JSONValue { try await simulator.stats() }
    func stop() async { await simulator.stop() }
    static func deviceToken() -> String { APNsSimulator.deviceToken() }
}
