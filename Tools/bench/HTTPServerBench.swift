import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitWire
import Dispatch
import Foundation

/// `buzzkit-bench http-server --port N [--mode sync|async] [--threads 2]`: serves `GET /hello`
/// (a trivial JSON envelope) through the full Router + envelope path until SIGTERM/SIGINT.
/// bench/http_server.sh runs wrk against it and against a raw C libmicrohttpd server.
/// `--mode async` (default) runs the handler as a task (suspend/resume hop); `--mode sync`
/// answers on the network thread.
enum HTTPServerBench {
    static func run(arguments: [String]) async throws {
        var port = 8080
        var mode = "async"
        var threads = 2
        var index = 0
        while index < arguments.count {
            let value = index + 1 < arguments.count ? arguments[index + 1] : ""
            switch arguments[index] {
            case "--port":
                port = Int(value) ?? port
                index += 2
            case "--mode":
                mode = value
                index += 2
            case "--threads":
                threads = Int(value) ?? threads
                index += 2
            default: index += 1
            }
        }
        var router = Router()
        if mode == "sync" {
            router.get("/hello", sync: { _ in .json(["message": "hello"]) })
        } else {
            router.get("/hello") { _ in .json(["message": "hello"]) }
        }
        let server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: port, workerThreads: threads),
            router: router, logger: .silent())
        try server.start()
        FileHandle.standardError.write(
            Data("http-server bench listening on 127.0.0.1:\(server.port) mode=\(mode)\n".utf8))
        await waitForTerminationSignal()
        await server.shutdown()
    }

    static func waitForTerminationSignal() async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "bench.signals")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumed = SignalOnce()
            var sources: [any DispatchSourceSignal] = []
            for signalNumber in [SIGINT, SIGTERM] {
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
                source.setEventHandler {
                    if resumed.fire() { continuation.resume() }
                }
                source.resume()
                sources.append(source)
            }
            SignalOnce.keepAlive(sources)
        }
    }
}

/// Resumes the continuation once, whichever signal comes first.
private final class SignalOnce: @unchecked Sendable {
    // Only touched on the serial signal queue.
    private var fired = false
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    func fire() -> Bool {
        if fired { return false }
        fired = true
        return true
    }

    static func keepAlive(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
}

struct BenchNotWritten: Error {}
