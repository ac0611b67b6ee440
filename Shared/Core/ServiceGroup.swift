import Dispatch
import Foundation

/// Runs a process's services and stops them gracefully on SIGTERM or SIGINT.
///
/// Every service's `run()` starts at once, in array order: put what others depend on first
/// (the connection pools), then what uses it (consumers, timers), then what feeds them (the HTTP
/// server). Shutdown goes the other way, one service at a time, as swift-service-lifecycle does:
/// the last service's `shutdown()` is called and its `run()` awaited before the one before it is
/// asked to stop. So a consumer still finishing a chunk after SIGTERM keeps the pools and clients
/// it uses alive until its `run()` returns.
///
/// A service whose `run()` fails, or returns before shutdown was asked, stops the whole group (the
/// process exits non-zero and the orchestrator restarts it). If shutting down takes longer than
/// `shutdownTimeout` (default 30 s) the group cancels what is left and reports `.timedOut`.
public final class ServiceGroup: Sendable {
    public struct Configuration: Sendable {
        public var signals: [Int32]
        public var shutdownTimeout: Duration

        public init(signals: [Int32] = [SIGTERM, SIGINT], shutdownTimeout: Duration = .seconds(30)) {
            self.signals = signals
            self.shutdownTimeout = shutdownTimeout
        }
    }

    public enum Outcome: Sendable, Equatable {
        /// Stopped on a signal or `triggerShutdown()`, everything finished in time.
        case stopped
        /// Shutdown began but some services had not finished within the timeout.
        case timedOut
    }

    private let services: [any Service]
    private let configuration: Configuration
    private let logger: Logger
    private let trigger = ShutdownTrigger()

    public init(services: [any Service], configuration: Configuration = .init(), logger: Logger) {
        self.services = services
        self.configuration = configuration
        self.logger = logger
    }

    /// Begins a graceful shutdown as if a signal had arrived.
    public func triggerShutdown() { trigger.fire(reason: "requested") }

    /// Runs every service until a signal, `triggerShutdown()` or a failing service; then shuts down.
    @discardableResult
    public func run() async throws -> Outcome {
        let signalSources = installSignalHandlers()
        defer { for source in signalSources { source.cancel() } }
        // One per service, fulfilled when its `run()` has returned (or thrown).
        let returned = services.map { _ in OneShot<Void>() }

        return try await withThrowingTaskGroup(of: GroupEvent.self) { group in
            for (index, service) in services.enumerated() {
                let logger = self.logger
                group.addTask {
                    defer { returned[index].fulfill(()) }
                    logger.info("service starting", metadata: ["part": service.name])
                    do {
                        try await service.run()
                        return .returned(service.name)
                    } catch {
                        return .failed(service.name, "\(error)")
                    }
                }
            }
            group.addTask { [trigger] in .shutdownRequested(await trigger.wait()) }

            var running = services.count
            var shuttingDown = false
            var timedOut = false
            var failure: String?
            while running > 0, !timedOut, let event = try await group.next() {
                switch event {
                case .shutdownRequested(let reason):
                    logger.notice("shutdown started", metadata: ["reason": reason])
                case .returned(let name):
                    running -= 1
                    if shuttingDown {
                        logger.info("service stopped", metadata: ["part": name])
                    } else {
                        failure = failure ?? "\(name) stopped unexpectedly"
                        logger.error("service stopped unexpectedly, stopping the others", metadata: ["part": name])
                    }
                case .failed(let name, let error):
                    running -= 1
                    failure = failure ?? "\(name): \(error)"
                    logger.error("service failed, stopping the others", metadata: ["part": name, "error": error])
                case .shutdownSequenceFinished:
                    continue
                case .deadlinePassed:
                    timedOut = true
                    logger.error(
                        "shutdown timed out, cancelling what is left",
                        metadata: ["timeout": "\(configuration.shutdownTimeout)"])
                }
                if !shuttingDown {
                    shuttingDown = true
                    trigger.fire(reason: "stopping")
                    group.addTask { [services, logger] in
                        await Self.shutDownInReverse(services, returned: returned, logger: logger)
                        return .shutdownSequenceFinished
                    }
                    group.addTask { [timeout = configuration.shutdownTimeout] in
                        try? await Task.sleep(for: timeout)
                        return .deadlinePassed
                    }
                }
            }
            // Ends the deadline timer, and after a timeout asks whatever still runs to stop at once
            // (the sequence then stops asking: the services it has not reached are cancelled too).
            group.cancelAll()
            if let failure { throw ServiceGroupError(message: failure) }
            return timedOut ? .timedOut : .stopped
        }
    }

    /// Last to first: ask one service to stop, wait until its `run()` returned, then the next.
    private static func shutDownInReverse(_ services: [any Service], returned: [OneShot<Void>], logger: Logger) async {
        for index in services.indices.reversed() {
            if Task.isCancelled { return }
            let service = services[index]
            logger.info("service stopping", metadata: ["part": service.name])
            await service.shutdown()
            // Cancelled after the shutdown timeout: stop waiting (the group cancels the services).
            guard (try? await returned[index].wait()) != nil else { return }
        }
    }

    private func installSignalHandlers() -> [any DispatchSourceSignal] {
        configuration.signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            let trigger = self.trigger
            source.setEventHandler { trigger.fire(reason: number == SIGTERM ? "SIGTERM" : "signal \(number)") }
            source.resume()
            return source
        }
    }
}

/// A service stopped the group by failing or by returning before shutdown.
public struct ServiceGroupError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

private enum GroupEvent: Sendable {
    case returned(String)
    case failed(String, String)
    case shutdownRequested(String)
    case shutdownSequenceFinished
    case deadlinePassed
}
