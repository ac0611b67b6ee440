import Foundation
import Synchronization

/// A BuzzKit executable started by a test: its environment, its log file, signals and exit.
///
/// The process is killed when the value is released, so a failing test never leaves one behind;
/// `./deploy/test` also stops the servers it started when the run ends.
public final class ServiceProcess: Sendable {
    public let name: String
    public let logPath: String
    private let process: ChildProcess

    /// Starts `executable` (a product name in the build's bin folder) with `environment` added to
    /// the test's own environment.
    public convenience init(executable: String, environment: [String: String], arguments: [String] = []) throws {
        try self.init(
            path: URL(fileURLWithPath: TestEnvironment.binDirectory).appendingPathComponent(executable).path,
            name: executable, environment: environment, arguments: arguments)
    }

    /// Starts any program (e.g. the Python of a browser test), recorded for cleanup like a service.
    public init(path: String, name: String, environment: [String: String], arguments: [String] = []) throws {
        self.name = name
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(TestEnvironment.uniqueName(name)).log")
        logPath = log.path
        let merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let pid = try Subprocess.spawn([path] + arguments, environment: merged, outputPath: log.path)
        process = ChildProcess(pid: pid)
        Self.recordForCleanup(pid: pid)
    }

    /// `./deploy/test` ends every pid listed in `$TEST_RUN_DIR/children` when the run ends, so a
    /// process survives neither a crashed test binary nor an interrupted run.
    private static func recordForCleanup(pid: Int32) {
        guard let dir = ProcessInfo.processInfo.environment["TEST_RUN_DIR"] else { return }
        let path = dir + "/children"
        if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        handle.seekToEndOfFile()
        handle.write(Data("\(pid)\n".utf8))
        try? handle.close()
    }

    deinit { process.killIfRunning() }

    public var processIdentifier: Int32 { process.pid }
    public var isRunning: Bool { process.isRunning }

    public func signal(_ number: Int32) { kill(process.pid, number) }

    /// Waits for the exit and returns the status; nil when it is still running after `timeout`.
    public func waitForExit(timeout: Duration = .seconds(30)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = process.exitStatus { return status }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// What the process wrote so far (JSON lines for BuzzKit services).
    public var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}

/// A child started with `posix_spawn`, its exit learned with `waitpid(pid, WNOHANG)`. Not
/// Foundation's `Process`: it learns of an exit when a socket inherited by the child closes, and
/// misses it when another process inherited that socket too (swift-corelibs-foundation#4795);
/// `waitForExit` then timed out on a service that had stopped.
/// Test fixtures (a throwaway redis-server, nghttpd, a Python echo server) start theirs with
/// `ChildProcess.spawn` for the same reason.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    /// The exit status once reaped: the exit code, or the signal's number when one ended it.
    private let reaped = Mutex<Int32?>(nil)

    init(pid: pid_t) { self.pid = pid }

    /// Starts `argv` (`argv[0]` an absolute path), stdin from /dev/null, stdout and stderr into
    /// `outputPath`, without any of the test process's other descriptors.
    public static func spawn(_ argv: [String], outputPath: String = "/dev/null") throws -> ChildProcess {
        ChildProcess(pid: try Subprocess.spawn(argv, environment: nil, outputPath: outputPath))
    }

    /// nil while the child runs.
    public var exitStatus: Int32? {
        reaped.withLock { reaped in
            if reaped == nil {
                var status: Int32 = 0
                let result = waitpid(pid, &status, WNOHANG)
                if result == pid {
                    // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as macros.
                    reaped = (status & 0x7f) == 0 ? (status >> 8) & 0xff : status & 0x7f
                } else if result < 0 && errno == ECHILD {
                    reaped = -1  // not ours to wait for any more: gone
                }
            }
            return reaped
        }
    }

    public var isRunning: Bool { exitStatus == nil }

    /// SIGKILL (children of the test process may inherit a blocked SIGTERM and ignore it) and
    /// waits for the exit on the calling thread, so the child's port is free when this returns.
    public func killAndWait() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        reaped.withLock { reaped in
            guard reaped == nil else { return }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            reaped = status & 0x7f
        }
    }

    /// SIGKILL when still running; reaped on a thread of its own so no zombie is left.
    func killIfRunning() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        let pid = self.pid
        Thread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }.start()
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
public func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    _ = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
