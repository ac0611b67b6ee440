import BuzzKitCore

extension WorkerThread {
    /// `run(orThrow:_:)` for a connection's thread: a stopped thread means a closed connection.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(orThrow: { PostgresError.connectionClosed("the connection is closed") }, body)
    }
}
