import BuzzKitCore
import BuzzKitRedis
import Foundation

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
    /// Added to the server's command line (`--cluster-enabled yes ...`).
    public let extraArguments: [String]
    private var process: ChildProcess?

    private init(extraArguments: [String]) {
        port = freeLoopbackPort()
        self.extraArguments = extraArguments
    }

    /// A new server, answering when this returns.
    public static func launch(extraArguments: [String] = []) async throws -> ThrowawayRedis {
        let server = ThrowawayRedis(extraArguments: extraArguments)
        try await server.start()
        return server
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

    public func restart() async throws {
        stop()
        try await start()
    }

    /// SIGKILL, like a crash (what the restart tests simulate), and waits until it is gone.
    public func stop() {
        process?.killAndWait()
        process = nil
    }

    /// Starts the server again on the same port after `stop()` (empty, like after a crash); does
    /// nothing while it runs. Spawning it and polling until it answers block: on a thread of its own.
    public func start() async throws {
        try await OwnThread.run { try self.startBlocking() }
    }

    private func startBlocking() throws {
        guard process == nil else { return }
        let process = try ChildProcess.spawn(
            [
                "/usr/bin/redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"
            ] + extraArguments)
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

extension ThrowawayRedis {
    /// A one-node Redis Cluster: cluster mode on and all 16384 slots assigned to this node. A
    /// client that is not Cluster-aware works with it (no key ever lives elsewhere), while the node
    /// still refuses any command or script whose keys hash to different slots (`CROSSSLOT`), as a
    /// Cluster of many nodes does. Its nodes file lives under `TEST_RUN_DIR` (or the temporary folder).
    public static func cluster() async throws -> ThrowawayRedis {
        let base = ProcessInfo.processInfo.environment["TEST_RUN_DIR"] ?? NSTemporaryDirectory()
        let directory = "\(base)/redis-cluster-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The cluster bus port defaults to the port + 10000, past 65535 for a high free port.
        let server = try await ThrowawayRedis.launch(extraArguments: [
            "--cluster-enabled", "yes", "--cluster-config-file", "\(directory)/nodes.conf", "--dir", directory,
            "--cluster-port", String(freeLoopbackPort())
        ])
        let client = RedisClient(configuration: try server.configuration(), logger: .silent())
        defer { client.close() }
        _ = try await client.send("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        let ok = await RedisTestSupport.eventually(limit: .seconds(20)) {
            ((try? await client.send("CLUSTER", "INFO"))?.string ?? "").contains("cluster_state:ok")
        }
        guard ok else {
            throw RedisError(.connection, "the one-node Redis Cluster on port \(server.port) did not come up")
        }
        return server
    }
}
