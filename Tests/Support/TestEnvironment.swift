import Foundation

/// What `./deploy/test` hands the tests: the throwaway servers' URLs and folders.
///
/// Integration tests read these and isolate themselves (their own schema, key prefix or stream)
/// so the whole suite can run in parallel against one Postgres and one Redis. A suite that needs
/// them carries `.requiresPostgres`, `.requiresRedis` or `.requiresTestStack` (TestTraits.swift),
/// so a bare `swift test` skips it, saying why, and runs the unit tests.
public enum TestEnvironment {
    public static var postgresURL: String { require("TEST_POSTGRES_URL") }
    public static var redisURL: String { require("TEST_REDIS_URL") }
    /// The folder of the throwaway Postgres cluster (`data/`, socket, log), for restart tests.
    public static var postgresDirectory: String { require("TEST_POSTGRES_DIR") }
    /// The folder of the throwaway Redis (pid file, log), for restart tests.
    public static var redisDirectory: String { require("TEST_REDIS_DIR") }
    /// Where the built executables are (`swift build --show-bin-path`).
    public static var binDirectory: String { require("BUZZKIT_BIN_DIR") }
    /// The repository root, for running `deploy/` scripts.
    public static var repositoryRoot: String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }

    /// Debian's Node.js (`/usr/bin/node` or `/usr/bin/nodejs`), for the dashboard's JavaScript unit tests.
    public static var node: String { require("TEST_NODE") }

    /// Whether `./deploy/test` (or you) exported the shared PostgreSQL's URL.
    public static var hasPostgres: Bool { isSet("TEST_POSTGRES_URL") }
    /// Whether the shared Redis's URL is exported.
    public static var hasRedis: Bool { isSet("TEST_REDIS_URL") }
    /// Whether everything `./deploy/test` hands the end-to-end tests is there: both servers, their
    /// folders (restart tests) and the built executables.
    public static var hasTestStack: Bool {
        hasPostgres && hasRedis && isSet("TEST_POSTGRES_DIR") && isSet("TEST_REDIS_DIR") && isSet("BUZZKIT_BIN_DIR")
    }

    /// Whether `./deploy/test` (or you) named a Node.js to run the dashboard's JavaScript tests with.
    public static var hasNode: Bool { isSet("TEST_NODE") }

    private static func isSet(_ name: String) -> Bool {
        !(ProcessInfo.processInfo.environment[name] ?? "").isEmpty
    }

    /// A name no other test in this run uses: `prefix_` plus 12 random lowercase hex digits.
    public static func uniqueName(_ prefix: String) -> String {
        let hex = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        return "\(prefix)_\(hex)"
    }

    private static func require(_ name: String) -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            fatalError("\(name) is not set: run the tests with ./deploy/test")
        }
        return value
    }
}
