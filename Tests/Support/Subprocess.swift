import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a short-lived child process (a setup script, `make-certs.sh`) and waits for it without
/// blocking Swift's cooperative pool: the wait happens on a thread of its own. `Process
/// .waitUntilExit()` called from a test's task held one of the pool's two threads for the child's
/// whole run (and once hung a test run); Foundation's `Process` also left finished children
/// zombies here and never called its termination handler, hence `posix_spawn` and `waitpid`.
public enum Subprocess {
    /// Runs `argv` (`argv[0]` an absolute path), stdin from /dev/null, stdout and stderr into
    /// `outputPath` (or /dev/null); returns the exit status (128 + signal when it was killed).
    public static func run(_ argv: [String], outputPath: String? = nil) async throws -> Int32 {
        try await OwnThread.run { try spawnAndWait(argv, outputPath: outputPath ?? "/dev/null") }
    }

    /// `run` for synchronous fixtures: waits on the calling thread (never call it from a test's
    /// task for a long-running child).
    public static func runBlocking(_ argv: [String], outputPath: String? = nil) throws -> Int32 {
        try spawnAndWait(argv, outputPath: outputPath ?? "/dev/null")
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    private static func spawnAndWait(_ argv: [String], outputPath: String) throws -> Int32 {
        let pid = try spawn(argv, environment: nil, outputPath: outputPath)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw Failure(description: "waitpid failed: \(errno)") }
        }
        // WIFEXITED / WEXITSTATUS, which Swift does not import as macros.
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Starts `argv` (`argv[0]` an absolute path) with stdin from /dev/null and stdout and stderr
    /// into `outputPath`, with `environment` (nil: the test process's own); the caller waits for it.
    static func spawn(_ argv: [String], environment: [String: String]?, outputPath: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of the test process goes to the child: a long-lived child (a restarted
        // PostgreSQL or Redis outlives the script that started it) must not hold descriptors of the
        // test process open. (glibc's closefrom action is not imported into Swift: each open
        // descriptor is named; one closed meanwhile is ignored by the close action.)
        for fd in openDescriptors() where fd > 2 { posix_spawn_file_actions_addclose(&actions, fd) }
        let cArgs = argv.map { strdup($0) } + [nil]
        defer { for argument in cArgs { free(argument) } }
        let cEnvironment = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for variable in cEnvironment ?? [] { free(variable) } }
        var pid: pid_t = 0
        let spawned =
            cEnvironment.map { posix_spawn(&pid, argv[0], &actions, nil, cArgs, $0) }
            ?? posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
        guard spawned == 0 else { throw Failure(description: "posix_spawn \(argv[0]) failed: \(spawned)") }
        return pid
    }

    /// The test process's open file descriptors, from /proc/self/fd.
    private static func openDescriptors() -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap { Int32($0) }
    }
}
