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
    private var process: ChildProcess?

    public init() throws {
        port = freeLoopbackPort()
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

    /// SIGKILL, like a crash (what the restart tests simulate), and waits until it is gone.
    public func stop() {
        process?.killAndWait()
        process = nil
    }

    /// Starts the server again on the same port after `stop()` (empty, like after a crash); does
    /// nothing while it runs.
    public func start() throws {
        guard process == nil else { return }
        let process = try ChildProcess.spawn([
            "/usr/bin/redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"
        ])
        self.process = process
        if let runDir = ProcessInfo.processInfo.environment["TEST_RUN_DIR"],
            let handle = FileHandle(forWritingAtPath: "\(runDir)/children") ?? Self.create("\(runDir)/children")
        {
            handle.seekToEndOfFile()
            handle.write(Data("\(process.pid)\n".utf8))
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
        let outputPath = NSTemporaryDirectory() + "bk_redis_ping_\(port)_\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = try? Subprocess.runBlocking(
            ["/usr/bin/redis-cli", "-h", "127.0.0.1", "-p", String(port), "ping"], outputPath: outputPath)
        guard status == 0 else { return false }
        return ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").contains("PONG")
    }
}
