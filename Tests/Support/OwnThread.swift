import Foundation

/// Runs blocking work (spawning and waiting for a child, polling a server until it answers) on a
/// thread of its own and awaits it: on one of the cooperative pool's two threads the same work
/// stalled every other test of the process for its whole duration, and on a loaded machine stream
/// consumers in other suites missed their deadlines.
public enum OwnThread {
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try body() })
            }.start()
        }
    }
}
