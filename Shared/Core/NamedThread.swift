import Foundation

/// Starts a dedicated OS thread (for blocking C calls: sockets, libpq, hiredis, libcurl) that
/// names itself, as `top -H`, profiles and the benchmarks' per-thread figures show it.
/// Foundation's `Thread.name` set before `start()` does not reach the OS on Linux: the thread
/// kept its creator's name (a network thread's, when a request opened a connection).
public enum NamedThread {
    /// - Parameter name: at most 15 bytes reach the kernel.
    public static func start(_ name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            Thread.current.name = name
            body()
        }
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }
}
