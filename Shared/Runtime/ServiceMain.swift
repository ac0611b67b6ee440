import BuzzKitCore
import BuzzKitHTTPServer
import Foundation

/// The whole of a service executable's `main`: read the environment (the shared settings and the
/// service's own), build the runtime, let the service add its routes and long-lived parts, run
/// until SIGTERM, and exit with a status that tells an orchestrator what happened.
///
/// ```swift
/// await ServiceMain.run(
///     service: "ingest",
///     configuration: { settings, environment in
///         try IngestConfiguration(consumerName: settings.instanceID, environment: environment)
///     }
/// ) { runtime, configuration, _ in
///     IngestService.makeServices(runtime: runtime, configuration: configuration)
/// }
/// ```
public enum ServiceMain {
    /// How a service process ends (`docs/runtime.md`).
    public enum ExitCode: Int32, Sendable {
        /// Stopped on SIGTERM/SIGINT, every part finished its in-flight work in time.
        case stopped = 0
        /// A part failed or stopped on its own, or the shutdown timed out: restart it.
        case failed = 1
        /// `EX_CONFIG` (sysexits.h): the environment is invalid; a restart cannot help.
        case invalidConfiguration = 78
    }

    /// Runs the service `name`. `configuration` reads the service's own variables (after the
    /// shared `ServiceSettings`, read with defaults even when some are invalid): when either has
    /// a problem the process logs one `invalid configuration` line naming every invalid variable
    /// and exits 78 before anything starts.
    public static func run<Configuration: Sendable>(
        service name: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        configuration read: (ServiceSettings, [String: String]) throws -> Configuration,
        setup: @Sendable (ServiceRuntime, Configuration, inout Router) async throws -> [any Service]
    ) async -> Never {
        unblockShutdownSignals()
        var reader = ConfigReader(environment: environment)
        let settings = ServiceSettings(serviceName: name, reading: &reader)
        var problems = reader.collectedError
        var configuration: Configuration?
        do {
            configuration = try read(settings, environment)
        } catch let error as ConfigurationError {
            problems = problems.adding(error)
        } catch {
            problems = problems.adding(ConfigurationError(problems: ["\(error)"], variables: []))
        }
        guard problems.problems.isEmpty, let configuration else {
            var seen = Set<String>()
            Logger(label: name).critical(
                "invalid configuration",
                metadata: [
                    "error": problems.description,
                    "variables": problems.variables.filter { seen.insert($0).inserted }.joined(separator: ",")
                ])
            exit(ExitCode.invalidConfiguration.rawValue)
        }
        var logger = Logger(label: name, logLevel: settings.logLevel)
        logger[metadataKey: "service"] = name
        logger[metadataKey: "instance"] = settings.instanceID
        do {
            let runtime = try ServiceRuntime(settings: settings, logger: logger)
            var router = runtime.makeRouter()
            let services = try await setup(runtime, configuration, &router)
            logger.notice(
                "starting", metadata: ["http.port": String(settings.httpPort), "http.host": settings.httpHost])
            try await runtime.run(router: router, services: services)
            exit(ExitCode.stopped.rawValue)
        } catch {
            logger.critical("service failed", metadata: ["error": "\(error)"])
            exit(ExitCode.failed.rawValue)
        }
    }

    /// The same for a process with no variables of its own (test fixtures).
    public static func run(
        service name: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        setup: @Sendable (ServiceRuntime, inout Router) async throws -> [any Service] = { _, _ in [] }
    ) async -> Never {
        await run(service: name, environment: environment, configuration: { _, _ in () }) { runtime, _, router in
            try await setup(runtime, &router)
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
