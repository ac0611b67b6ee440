import BuzzKitCore
import BuzzKitHTTPServer
import Synchronization

/// Runs an `HTTPServer` as a `Service`: binds on `run()`, and on `shutdown()` stops accepting,
/// lets in-flight requests finish, then lets `run()` return.
public final class HTTPService: Service {
    public let name = "http"
    public let server: HTTPServer
    private let stopped = Mutex<(done: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    public init(server: HTTPServer) {
        self.server = server
    }

    public func run() async throws {
        try server.start()
        await withCheckedContinuation { continuation in
            let alreadyStopped = stopped.withLock { state in
                if !state.done { state.waiter = continuation }
                return state.done
            }
            if alreadyStopped { continuation.resume() }
        }
    }

    public func shutdown() async {
        await server.shutdown()
        let waiter = stopped.withLock { state in
            state.done = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}
