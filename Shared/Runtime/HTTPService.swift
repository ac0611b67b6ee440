import BuzzKitCore
import BuzzKitHTTPServer

/// Runs an `HTTPServer` as a `Service`: binds on `run()`, and on `shutdown()` stops accepting,
/// lets in-flight requests finish, then lets `run()` return.
public final class HTTPService: Service {
    public let name = "http"
    public let server: HTTPServer
    private let stopped = OneShot<Void>()

    public init(server: HTTPServer) {
        self.server = server
    }

    /// Serves until `shutdown()` finished (or, cancelled, stops the server itself first).
    public func run() async throws {
        guard !stopped.isFulfilled else { return }
        try server.start()
        if (try? await stopped.wait()) == nil { await server.shutdown() }
    }

    public func shutdown() async {
        await server.shutdown()
        stopped.fulfill(())
    }
}
