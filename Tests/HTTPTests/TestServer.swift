import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitWire
import Testing

/// Starts a server on a free loopback port with the given routes, runs `body` with its base URL,
/// and always shuts it down.
func withServer<T>(
    configuration: HTTPServer.Configuration = .init(), logger: Logger = .silent(),
    observer: (@Sendable (RequestLog) -> Void)? = nil,
    routes: (inout Router) -> Void,
    _ body: (HTTPServer, String) async throws -> T
) async throws -> T {
    var router = Router()
    routes(&router)
    let server = HTTPServer(configuration: configuration, router: router, logger: logger, observer: observer)
    try server.start()
    do {
        let result = try await body(server, "http://127.0.0.1:\(server.port)")
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}

extension Envelope {
    static func from(_ bytes: [UInt8]) throws -> Envelope {
        try Envelope.decode(bytes)
    }
}
