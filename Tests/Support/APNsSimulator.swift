import BuzzKitHTTPClient
import BuzzKitWire
import Foundation

/// A private APNs simulator (`apns-sim`) for one test: its own certificates, ports and provider
/// key, killed when the value is released (or by `stop()`), so tests never share faults or
/// recordings. Drives the simulator's control API (Tools/apns-sim/README.md).
public final class APNsSimulator: Sendable {
    public let port: Int
    public let controlPort: Int
    /// The CA that signed the simulator's certificate: clients trust it instead of the system store.
    public let caFile: String
    private let process: ServiceProcess
    private let control: HTTPClient
    private let directory: String

    /// Starts a simulator that accepts provider tokens signed by `publicKeyPEM` for `keyId`/`teamId`.
    /// `record: false` passes `--no-record` (benchmarks).
    public init(keyId: String, teamId: String, publicKeyPEM: String, record: Bool = true) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("apns-sim"))
            .path
        directory = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try await Self.run("/bin/bash", [TestEnvironment.repositoryRoot + "/Tools/apns-sim/make-certs.sh", dir])
        caFile = dir + "/ca.pem"
        let publicKeyPath = dir + "/provider.pem"
        try publicKeyPEM.write(toFile: publicKeyPath, atomically: true, encoding: .utf8)
        var arguments = [
            "--port", "0", "--control-port", "0", "--threads", "1",
            "--cert", dir + "/cert.pem", "--key", dir + "/key.pem", "--key", "\(keyId)=\(teamId):\(publicKeyPath)"
        ]
        if !record { arguments.append("--no-record") }
        process = try ServiceProcess(executable: "apns-sim", environment: [:], arguments: arguments)
        let deadline = ContinuousClock.now + .seconds(20)
        var ports: (Int, Int)?
        while ports == nil {
            ports = Self.readyPorts(process.output)
            if ports != nil { break }
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw APNsSimulatorError(description: "apns-sim did not start: \(process.output)")
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

    public var baseURL: String { "https://127.0.0.1:\(port)" }

    /// `POST /control/<path>` with a JSON body; returns the parsed answer.
    @discardableResult
    public func post(_ path: String, _ body: JSONValue = [:]) async throws -> JSONValue {
        let response = try await control.execute(
            HTTPClientRequest(
                method: .POST, url: "http://127.0.0.1:\(controlPort)/control/\(path)",
                headers: ["content-type": "application/json"], body: body.jsonBytes))
        guard response.status == 200 else {
            throw APNsSimulatorError(
                description: "control \(path): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        return try JSONValue.parse(response.body)
    }

    /// The pushes the simulator accepted for `token`, oldest first.
    public func pushes(token: String) async throws -> [JSONValue] {
        try await get("pushes?token=\(token)").arrayValue ?? []
    }

    /// Every accepted push (up to 100,000), oldest first.
    public func allPushes() async throws -> [JSONValue] {
        try await get("pushes?limit=100000").arrayValue ?? []
    }

    public func stats() async throws -> JSONValue { try await get("stats") }

    /// Stops the simulator and its control client.
    public func stop() async {
        await control.shutdown()
        process.signal(SIGTERM)
        _ = await process.waitForExit(timeout: .seconds(5))
    }

    /// A random 64-hex-digit device token.
    public static func deviceToken() -> String {
        (0..<2).map { _ in UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }.joined()
    }

    private func get(_ path: String) async throws -> JSONValue {
        let response = try await control.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(controlPort)/control/\(path)"))
        return try JSONValue.parse(response.body)
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

    /// Runs a setup command to its end, waiting off the cooperative pool (`Subprocess`).
    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            TestEnvironment.uniqueName("apns-sim-setup") + ".log"
        ).path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let status = try await Subprocess.run([executable] + arguments, outputPath: log)
        guard status == 0 else {
            let output = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
            throw APNsSimulatorError(description: "\(arguments.first ?? executable) exited with \(status): \(output)")
        }
    }
}

public struct APNsSimulatorError: Error, CustomStringConvertible {
    public var description: String
}
