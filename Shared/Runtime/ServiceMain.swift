import BuzzKitCore
import BuzzKitHTTPServer
import Foundation

/// The whole of a service executable's `main`: read the environment, build the runtime, let the
/// service add its routes and long-lived parts, run until SIGTERM, and exit with a status that
/// tells an orchestrator what happened (0 stopped cleanly, 1 failed, 78 bad configuration).
public enum ServiceMain {
    public static func run(
        service name: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        setup: @Sendable (ServiceRuntime, inout Router) async throws -> [any Service] = { _, _ in [] }
    ) async -> Never {
        unblockShutdownSignals()
        let settings: ServiceSettings
        do {
            settings = try ServiceSettings(serviceName: name, environment: environment)
        } catch {
            Logger(label: name).critical("invalid configuration", metadata: ["error": error.description])
            exit(78)  // EX_CONFIG
        }
        var logger = Logger(label: name, logLevel: settings.logLevel)
        logger[metadataKey: "service"] = name
        logger[metadataKey: "instance"] = settings.instanceID
        do {
            let runtime = try ServiceRuntime(settings: settings, logger: logger)
            var router = runtime.makeRouter()
            let services = try await setup(runtime, &router)
            logger.notice(
                "starting", metadata: ["http.port": String(settings.httpPort), "http.host": settings.httpHost])
            try await runtime.run(router: router, services: services)
            exit(0)
        } catch {
            logger.critical("service failed", metadata: ["error": "\(error)"])
            exit(1)
        }
    }
}

/// A process inherits its parent's blocked-signal mask (a test runner's worker thread, a
/// supervisor); a service that kept SIGTERM blocked could never be stopped gracefully. Called
/// before the first suspension, on the main thread, so later threads inherit the unblocked mask.
private func unblockShutdownSignals() {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    sigaddset(&signals, SIGINT)
    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
}
