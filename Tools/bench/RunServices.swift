import BuzzKitCore

/// Runs a service's parts in this process while `body` measures them: as a `ServiceGroup` (no
/// signals), shut down the way a process does (last to first, each `run()` awaited) once `body`
/// returned or threw. Structured: nothing started here outlives the call.
func runServices(_ services: [any Service], _ body: () async throws -> Void) async throws {
    let group = ServiceGroup(services: services, configuration: .init(signals: []), logger: .silent())
    async let outcome = group.run()
    let result: Result<Void, any Error>
    do {
        result = .success(try await body())
    } catch {
        result = .failure(error)
    }
    group.triggerShutdown()
    if try await outcome == .timedOut { throw ServiceGroupError(message: "the measured services did not stop in time") }
    try result.get()
}
