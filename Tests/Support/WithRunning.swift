import BuzzKitCore
import BuzzKitRedis

/// Runs `services` as a `ServiceGroup` (no signals) while `body` runs, then shuts them down the
/// way a process does (last to first, each `run()` awaited) before returning, also when `body`
/// throws. Structured: nothing a test started outlives it (`Task { try? await service.run() }`
/// did). Throws when a service failed or stopped on its own.
public func withRunning<T>(
    isolation: isolated (any Actor)? = #isolation,
    _ services: [any Service],
    shutdownTimeout: Duration = .seconds(60),
    _ body: () async throws -> T
) async throws -> T {
    let group = ServiceGroup(
        services: services, configuration: .init(signals: [], shutdownTimeout: shutdownTimeout),
        logger: .silent())
    async let outcome = group.run()
    let result: Result<T, any Error>
    do {
        result = .success(try await body())
    } catch {
        result = .failure(error)
    }
    group.triggerShutdown()
    let stopped = try await outcome
    let value = try result.get()
    if stopped == .timedOut { throw ServiceGroupError(message: "the services did not stop within \(shutdownTimeout)") }
    return value
}

/// A stream consumer as a `Service`, for `withRunning` (the service processes use
/// `StreamConsumerService`, which lives in Runtime).
public struct ConsumerService: Service {
    public let consumer: StreamConsumer
    public var name: String { "consumer.\(consumer.configuration.stream)" }
    public init(_ consumer: StreamConsumer) { self.consumer = consumer }
    public func run() async throws { await consumer.run() }
    public func shutdown() async { consumer.stop() }
}

/// `withRunning` for stream consumers: they consume while `body` runs; then each is stopped and
/// its `run()` awaited (in-flight handlers finished and acked) before this returns.
public func withRunning<T>(
    isolation: isolated (any Actor)? = #isolation,
    _ consumers: StreamConsumer..., body: () async throws -> T
) async throws -> T {
    try await withRunning(consumers.map { ConsumerService($0) }, body)
}

/// Services a harness runs across several of its calls (started in `start`, stopped in `stop`),
/// where one `withRunning` body cannot hold them: a `ServiceGroup` like the process's own, so
/// `stop()` shuts them down last to first and returns once every `run()` has returned. Holding
/// `Task { try? await service.run() }` per service left the order to chance.
public final class RunningServices: Sendable {
    private let group: ServiceGroup
    private let running: Task<Void, Never>

    public init(_ services: [any Service], shutdownTimeout: Duration = .seconds(60)) {
        let group = ServiceGroup(
            services: services, configuration: .init(signals: [], shutdownTimeout: shutdownTimeout),
            logger: .silent())
        self.group = group
        running = Task { _ = try? await group.run() }
    }

    /// Shuts the services down and waits until every one has returned.
    public func stop() async {
        group.triggerShutdown()
        await running.value
    }
}
