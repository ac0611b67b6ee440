import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitWire
import Synchronization

/// `/healthz`, `/readyz` and `/metrics`, which every service serves on its HTTP port.
///
/// - `/healthz`: 200 while the process runs (liveness; never touches a dependency).
/// - `/readyz`: 200 only when PostgreSQL and Redis both answer within `checkTimeout`, and not
///   while the service is draining; otherwise 503 `not_ready` with each check's result in `details`.
/// - `/metrics`: the Prometheus text format of the service's registry, with the lag of the
///   stream consumer groups the process consumes read from Redis first (`StreamLagMetrics`).
public struct HealthRoutes: Sendable {
    let serviceName: String
    let postgres: PostgresClient
    let redis: RedisClient
    let metrics: MetricsRegistry
    let streams: StreamLagMetrics
    let draining: DrainFlag
    let checkTimeout: Duration

    public func register(on router: inout Router) {
        let serviceName = self.serviceName
        router.get("/healthz", sync: { _ in Response.json(["status": "ok", "service": .string(serviceName)]) })
        router.get("/metrics") { [metrics, streams] _ in
            await streams.refresh()
            return Response.prometheus(metrics.render())
        }
        router.get("/readyz") { [self] _ in await readiness() }
    }

    func readiness() async -> Response {
        async let postgresCheck = check { try await postgres.ping() }
        async let redisCheck = check { try await redis.ping() }
        let results: [String: JSONValue] = [
            "postgres": .string(await postgresCheck), "redis": .string(await redisCheck)
        ]
        let draining = self.draining.isSet
        let ready = !draining && results.values.allSatisfy { $0 == "ok" }
        if ready {
            return Response.json(["ready": true, "service": .string(serviceName), "checks": .object(results)])
        }
        var details = results
        if draining { details["shutdown"] = "draining" }
        return Response.error(APIError(.notReady, "\(serviceName) is not ready", details: .object(details)))
    }

    /// Runs one dependency check with a deadline; "ok" or the reason it failed.
    private func check(_ body: @escaping @Sendable () async throws -> Void) async -> String {
        await withDeadline(checkTimeout, onTimeout: "timed out after \(checkTimeout)") {
            do {
                try await body()
                return "ok"
            } catch {
                return "\(error)"
            }
        }
    }
}

/// Set once shutdown begins, so `/readyz` turns 503 and load balancers stop sending work.
public final class DrainFlag: Sendable {
    private let value = Atomic<Bool>(false)
    public init() {}
    public func set() { value.store(true, ordering: .relaxed) }
    public var isSet: Bool { value.load(ordering: .relaxed) }
}
