import BuzzKitCore
import BuzzKitPostgres
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL cluster of a test's own, for tests that restart or stop the server: started with
/// `deploy/lib/common.sh` (`bk_start_postgres`) in a fresh folder on a free port, so the shared
/// server every other test uses stays up.
public final class ThrowawayPostgres: Sendable {
    public let directory: String
    public let port: Int
    public var url: String { "postgres://buzzkit@127.0.0.1:\(port)/buzzkit" }

    private init(directory: String, port: Int) {
        self.directory = directory
        self.port = port
    }

    /// initdb + start; takes a few seconds.
    public static func start() async throws -> ThrowawayPostgres {
        let parent = ProcessInfo.processInfo.environment["TEST_RUN_DIR"] ?? NSTemporaryDirectory()
        let directory = (parent as NSString).appendingPathComponent(TestEnvironment.uniqueName("pg"))
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        let output = try await PostgresTestSupport.commonShell(
            #"port="$(bk_free_port)"; bk_start_postgres "$1" "$port" && echo "PORT=$port""#, arguments: [directory])
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("PORT=") }),
            let port = Int(line.dropFirst(5))
        else { throw PostgresTestSupport.ShellError(status: -1, output: output) }
        let server = ThrowawayPostgres(directory: directory, port: port)
        server.registerForCleanup()
        return server
    }

    /// `pg_ctl restart -m fast -w`: every open connection is cut; the server is back on return.
    public func restart() async throws {
        _ = try await PostgresTestSupport.commonShell(
            #"bk_as_pg_user "$(bk_pg_bindir)/pg_ctl" -D "$1/data" -l "$1/postgres.log" -m fast -w -t 60 restart >/dev/null"#,
            arguments: [directory])
        registerForCleanup()
    }

    /// Stops the server and removes its folder.
    public func stop() async throws {
        _ = try await PostgresTestSupport.commonShell(#"bk_stop_postgres "$1"; rm -rf "$1""#, arguments: [directory])
    }

    /// Adds the postmaster's pid to `deploy/test`'s list of children, so a crashed test run does
    /// not leave the server behind.
    private func registerForCleanup() {
        guard let runDirectory = ProcessInfo.processInfo.environment["TEST_RUN_DIR"],
            let pidFile = FileManager.default.contents(atPath: directory + "/data/postmaster.pid"),
            let pid = String(decoding: pidFile, as: UTF8.self).split(separator: "\n").first
        else { return }
        let path = runDirectory + "/children"
        if let handle = FileHandle(forWritingAtPath: path) {
            handle.seekToEndOfFile()
            handle.write(Data("\(pid)\n".utf8))
            try? handle.close()
        } else {
            FileManager.default.createFile(atPath: path, contents: Data("\(pid)\n".utf8))
        }
    }
}

public enum PostgresTestSupport {
    public struct ShellError: Error, CustomStringConvertible {
        public var status: Int32
        public var output: String
        public var description: String { "shell command failed (\(status)): \(output)" }
        public init(status: Int32, output: String) {
            self.status = status
            self.output = output
        }
    }

    /// A client on the shared test server (or `url`) whose sessions use `schema` (created first), so
    /// a test's tables never meet another test's.
    public static func client(schema: String, poolSize: Int = 4, url: String = TestEnvironment.postgresURL)
        async throws -> PostgresClient
    {
        let admin = try PostgresClient(url: url, logger: .silent())
        try await admin.execute("CREATE SCHEMA IF NOT EXISTS \"\(schema)\"")
        await admin.shutdown()
        var configuration = try PostgresConfiguration(url: url)
        configuration.searchPath = [schema]
        configuration.poolSize = poolSize
        return PostgresClient(configuration: configuration, logger: .silent())
    }

    /// Runs `script` in bash with `deploy/lib/common.sh` sourced; `$1...` are `arguments`.
    /// Returns stdout and stderr together; throws on a non-zero exit.
    ///
    /// Runs through `Subprocess` (a thread of its own waits for the child, never the Swift pool).
    public static func commonShell(_ script: String, arguments: [String]) async throws -> String {
        let common = TestEnvironment.repositoryRoot + "/deploy/lib/common.sh"
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent(
            TestEnvironment.uniqueName("sh") + ".log"
        ).path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let argv = ["/bin/bash", "-c", "set -e; source \"\(common)\"; " + script, "bash"] + arguments
        let status = try await Subprocess.run(argv, outputPath: outputPath)
        let output = String(decoding: FileManager.default.contents(atPath: outputPath) ?? Data(), as: UTF8.self)
        guard status == 0 else { throw ShellError(status: status, output: output) }
        return output
    }
}
