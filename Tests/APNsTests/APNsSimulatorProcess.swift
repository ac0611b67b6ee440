import BuzzKitAPNs
import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation

/// A private APNs simulator (`apns-sim`) for one test: its own certificates, ports and provider
/// key, killed when the value is released (or by `stop()`), so tests never share faults or
/// recordings.
final class APNsSimulatorProcess: Sendable {
    let port: Int
    let controlPort: Int
    let caFile: String
    let credentials: APNsCredentials
    private let process: ServiceProcess
    private let control: HTTPClient
    private let directory: String

    /// Starts the simulator with a fresh provider key (team `TEAM000001`, key id random).
    init(teamId: String = "TEAM000001") async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("apns-sim")).path
        directory = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Self.run("/bin/bash", [TestEnvironment.repositoryRoot + "/Tools/apns-sim/make-certs.sh", dir])
        caFile = dir + "/ca.pem"
        let key = ES256PrivateKey.generate()
        let keyId = String(TestEnvironment.uniqueName("K").suffix(10)).uppercased()
        let publicKeyPath = dir + "/provider.pem"
        try key.publicKeyPEM.write(toFile: publicKeyPath, atomically: true, encoding: .utf8)
        credentials = try APNsCredentials(teamId: teamId, keyId: keyId, privateKey: key)
        process = try ServiceProcess(executable: "apns-sim", environment: [:], arguments: [
            "--port", "0", "--control-port", "0", "--threads", "1",
            "--cert", dir + "/cert.pem", "--key", dir + "/key.pem",
            "--key", "\(keyId)=\(teamId):\(publicKeyPath)",
        ])
        if let children = ProcessInfo.processInfo.environment["TEST_RUN_DIR"] {
            // deploy/test kills what is listed here if the test binary dies before our deinit.
            if let handle = FileHandle(forWritingAtPath: children + "/children") ?? Self.create(children + "/children") {
                handle.seekToEndOfFile()
                handle.write(Data("\(process.processIdentifier)\n".utf8))
                try? handle.close()
            }
        }
        let deadline = ContinuousClock.now + .seconds(20)
        var ports: (Int, Int)?
        while ports == nil {
            ports = Self.readyPorts(process.output)
            if ports != nil { break }
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw SimulatorError(message: "apns-sim did not start: \(process.output)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        port = ports!.0
        controlPort = ports!.1
        control = try HTTPClient(configuration: HTTPClient.Configuration(httpVersion: .http1_1), logger: .silent())
    }

    deinit {
        process.signal(SIGKILL)
        try? FileManager.default.removeItem(atPath: directory)
    }

    var baseURL: String { "https://127.0.0.1:\(port)" }

    /// An APNs client pointed at this simulator.
    func makeClient(tokenCache: APNsTokenCache = APNsTokenCache(), maxConcurrentStreams: Int = 1000) throws -> APNsClient {
        try APNsClient(configuration: .init(environment: .sandbox, baseURL: baseURL, caFile: caFile,
                                            maxConcurrentStreams: maxConcurrentStreams),
                       tokenCache: tokenCache, logger: .silent())
    }

    /// `POST /control/<path>` with a JSON body; returns the parsed answer.
    @discardableResult
    func post(_ path: String, _ body: JSONValue = [:]) async throws -> JSONValue {
        let response = try await control.execute(HTTPClientRequest(
            method: .POST, url: "http://127.0.0.1:\(controlPort)/control/\(path)",
            headers: ["content-type": "application/json"], body: body.jsonBytes))
        guard response.status == 200 else {
            throw SimulatorError(message: "control \(path): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        return try JSONValue.parse(response.body)
    }

    /// The pushes the simulator accepted for `token`, oldest first.
    func pushes(token: String) async throws -> [JSONValue] {
        let response = try await control.execute(HTTPClientRequest(
            url: "http://127.0.0.1:\(controlPort)/control/pushes?token=\(token)"))
        return try JSONValue.parse(response.body).arrayValue ?? []
    }

    func stats() async throws -> JSONValue {
        let response = try await control.execute(HTTPClientRequest(url: "http://127.0.0.1:\(controlPort)/control/stats"))
        return try JSONValue.parse(response.body)
    }

    /// Stops the simulator and its control client.
    func stop() async {
        await control.shutdown()
        process.signal(SIGTERM)
        _ = await process.waitForExit(timeout: .seconds(5))
    }

    /// A random 64-hex-digit device token.
    static func deviceToken() -> String {
        Digest.hex(SecureRandom.bytes(32))
    }

    private static func readyPorts(_ output: String) -> (Int, Int)? {
        for line in output.split(separator: "\n") where line.hasPrefix("apns-sim listening on ") {
            let words = line.split(separator: " ")
            guard words.count >= 6,
                  let port = words[3].split(separator: ":").last.flatMap({ Int($0) }),
                  let controlPort = words[5].split(separator: ":").last.flatMap({ Int($0) })
            else { continue }
            return (port, controlPort)
        }
        return nil
    }

    private static func create(_ path: String) -> FileHandle? {
        FileManager.default.createFile(atPath: path, contents: nil)
        return FileHandle(forWritingAtPath: path)
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SimulatorError(message: "\(arguments.first ?? executable) exited with \(process.terminationStatus)")
        }
    }
}

struct SimulatorError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
