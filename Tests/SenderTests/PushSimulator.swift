import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation

/// A private APNs simulator for one test (adapted from Tests/APNsTests/APNsSimulatorProcess.swift:
/// the lead may move one shared copy to Tests/Support): its own certificates, ports and the
/// tenant's provider key; killed when released.
final class PushSimulator: Sendable {
    let port: Int
    let controlPort: Int
    let caFile: String
    private let process: ServiceProcess
    private let control: HTTPClient
    private let directory: String

    init(keyId: String, teamId: String, publicKeyPEM: String, record: Bool = true) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("push-sim")).path
        directory = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try runTool("/bin/bash", [TestEnvironment.repositoryRoot + "/Tools/apns-sim/make-certs.sh", dir])
        caFile = dir + "/ca.pem"
        let publicKeyPath = dir + "/provider.pem"
        try publicKeyPEM.write(toFile: publicKeyPath, atomically: true, encoding: .utf8)
        var arguments = ["--port", "0", "--control-port", "0", "--threads", "1",
                         "--cert", dir + "/cert.pem", "--key", dir + "/key.pem", "--key", "\(keyId)=\(teamId):\(publicKeyPath)"]
        if !record { arguments.append("--no-record") }
        process = try ServiceProcess(executable: "apns-sim", environment: [:], arguments: arguments)
        registerChild(process)
        let deadline = ContinuousClock.now + .seconds(20)
        var ports: (Int, Int)?
        while ports == nil {
            ports = Self.readyPorts(process.output)
            if ports != nil { break }
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw StackError(description: "apns-sim did not start: \(process.output)")
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

    @discardableResult
    func post(_ path: String, _ body: JSONValue = [:]) async throws -> JSONValue {
        let response = try await control.execute(HTTPClientRequest(
            method: .POST, url: "http://127.0.0.1:\(controlPort)/control/\(path)",
            headers: ["content-type": "application/json"], body: body.jsonBytes))
        guard response.status == 200 else {
            throw StackError(description: "control \(path): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        return try JSONValue.parse(response.body)
    }

    /// The pushes the simulator accepted for `token`, oldest first.
    func pushes(token: String) async throws -> [JSONValue] {
        let response = try await control.execute(HTTPClientRequest(
            url: "http://127.0.0.1:\(controlPort)/control/pushes?token=\(token)"))
        return try JSONValue.parse(response.body).arrayValue ?? []
    }

    /// Every accepted push (up to 100,000).
    func allPushes() async throws -> [JSONValue] {
        let response = try await control.execute(HTTPClientRequest(
            url: "http://127.0.0.1:\(controlPort)/control/pushes?limit=100000"))
        return try JSONValue.parse(response.body).arrayValue ?? []
    }

    func stats() async throws -> JSONValue {
        let response = try await control.execute(HTTPClientRequest(url: "http://127.0.0.1:\(controlPort)/control/stats"))
        return try JSONValue.parse(response.body)
    }

    func stop() async {
        await control.shutdown()
        process.signal(SIGTERM)
        _ = await process.waitForExit(timeout: .seconds(5))
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
}

struct StackError: Error, CustomStringConvertible {
    var description: String
}

/// deploy/test kills what is listed in $TEST_RUN_DIR/children if the test binary dies first.
func registerChild(_ process: ServiceProcess) {
    guard let dir = ProcessInfo.processInfo.environment["TEST_RUN_DIR"] else { return }
    let path = dir + "/children"
    if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
    guard let handle = FileHandle(forWritingAtPath: path) else { return }
    handle.seekToEndOfFile()
    handle.write(Data("\(process.processIdentifier)\n".utf8))
    try? handle.close()
}

func runTool(_ executable: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw StackError(description: "\(arguments.first ?? executable) exited with \(process.terminationStatus)")
    }
}
