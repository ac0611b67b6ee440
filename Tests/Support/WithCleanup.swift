/// Runs `body`, then `cleanup`, and returns `body`'s result; `cleanup` also runs (and finishes)
/// when `body` throws. For async cleanups a `defer` cannot await: `defer { Task { await
/// client.shutdown() } }` let the shutdown run after the test had ended, racing the next one.
///
/// ```swift
/// let client = try HTTPClient(logger: .silent())
/// try await withCleanup {
///     ... use client ...
/// } finally: {
///     await client.shutdown()
/// }
/// ```
public func withCleanup<T>(
    isolation: isolated (any Actor)? = #isolation,
    _ body: () async throws -> T,
    finally cleanup: () async -> Void
) async rethrows -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
    return result
}
