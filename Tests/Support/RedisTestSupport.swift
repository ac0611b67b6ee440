import Foundation
import BuzzKitCore
import BuzzKitRedis

/// Helpers for tests against Redis: a client on the shared test server, polling, and a private
/// throwaway server that a test may restart (never restart the shared one: other tests use it).
public enum RedisTestSupport {
    /// A client on the shared test Redis (`TEST_REDIS_URL`).
    public static func client(poolSize: Int = 4, logger: Logger = .silent()) throws -> RedisClient {
        var configuration = try RedisConfiguration(url: TestEnvironment.redisURL)
        configuration.poolSize = poolSize
        return RedisClient(configuration: configuration, logger: logger)
    }

    /// Polls `condition` every 20 ms until it holds or `limit` passes; returns whether it held.
    /// A generous upper bound for asynchronous work, not a timing assertion.
    public static func eventually(
        limit: Duration = .seconds(30),
        _ condition: () async throws -> Bool
    ) async rethrows -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }
}

/// A `redis-server` of the test's own, without persistence, on a free loopback port.
/// `restart()` kills it and starts a new one on the same port (all data is lost, like a crash).
public final class ThrowawayRedis: @unchecked Sendable {
    // @unchecked: `process` is only touched by the test that owns this instance, sequentially.
    public let port: Int
    private var process: Process?

    public init() throws {
        port = try Self.freePort()
        try start()
    }

    deinit { stop() }

    public var url: String { "redis://127.0.0.1:\(port)" }

    public func configuration(poolSize: Int = 1) throws -> RedisConfiguration {
        var configuration = try RedisConfiguration(url: url)
        configuration.poolSize = poolSize
        configuration.connectTimeout = .seconds(1)
        configuration.commandTimeout = .seconds(2)
        return configuration
    }

    public func restart() throws {
        stop()
        try start()
    }

    public func stop() {
        guard let process else { return }
        // SIGKILL: a child of a Swift process inherits a signal mask that blocks SIGTERM, and a
        // crash is what the restart tests want to simulate anyway.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    private func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--loglevel", "warning"
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        if let runDir = ProcessInfo.processInfo.environment["TEST_RUN_DIR"],
            let handle = FileHandle(forWritingAtPath: "\(runDir)/children") ?? Self.create("\(runDir)/children")
        {
            handle.seekToEndOfFile()
            handle.write(Data("\(process.processIdentifier)\n".utf8))
            try? handle.close()
        }
        // Wait until it answers (bounded: a server that does not come up fails the test).
        for _ in 0..<200 {
            if Self.answersPing(port: port) { return }
            usleep(25_000)
        }
        throw RedisError(.connection, "throwaway redis-server on port \(port) did not start")
    }

    private static func create(_ path: String) -> FileHandle? {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return FileHandle(forWritingAtPath: path)
    }

    private static func answersPing(port: Int) -> Bool {
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        cli.arguments = ["-h", "127.0.0.1", "-p", String(port), "ping"]
        let pipe = Pipe()
        cli.standardOutput = pipe
        cli.standardError = FileHandle.nullDevice
        guard (try? cli.run()) != nil else { return false }
        cli.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return output.contains("PONG")
    }

    private static func freePort() throws -> Int {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = [
            "-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1]); s.close()"
        ]
        let pipe = Pipe()
        python.standardOutput = pipe
        try python.run()
        python.waitUntilExit()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw RedisError(.configuration, "no free port")
        }
        return port
    }
}
