import BuzzKitCore
import Synchronization

/// The way services talk to PostgreSQL: a pool of `configuration.poolSize` connections (default 4),
/// each on its own thread, opened lazily and reopened when found broken.
///
/// ```swift
/// let client = PostgresClient(configuration: try PostgresConfiguration(url: url), logger: logger)
/// let rows = try await client.query("SELECT id, name FROM t WHERE id = $1", [id])
/// for row in rows { let (id, name) = try row.decode((UUID, String?).self) }
/// try await client.withTransaction { tx in try await tx.execute("UPDATE ...", [...]) }
/// ```
///
/// A statement that fails because the server restarted since the connection's last use is retried
/// once, transparently, when that is safe (outside a transaction, and nothing reached the
/// server).
///
/// The client is a `Service`: a service process puts it first in its `ServiceGroup`, so it is
/// stopped last, after every part that uses it has returned; `run()` waits for `shutdown()` and
/// then closes the connections. A client used without a group (tools, tests) calls `shutdown()`
/// before it is dropped.
public final class PostgresClient: Service {
    public let name = "postgres"
    public let configuration: PostgresConfiguration
    let logger: Logger
    private let pool: ConnectionPool<PostgresConnection>
    private let listeners = Mutex<[ObjectIdentifier: PostgresListener]>([:])
    private let isShutdown = Atomic<Bool>(false)
    private let stopRequested = OneShot<Void>()
    private let closed = OneShot<Void>()

    public init(configuration: PostgresConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        pool = ConnectionPool(capacity: configuration.poolSize, closedError: { PostgresError.connectionClosed() }) {
            number in
            PostgresConnection(configuration: configuration, logger: logger, name: "postgres-pool-\(number)")
        }
    }

    /// A client for `postgres://user[:password]@host:port/database[?sslmode=...]`.
    public convenience init(url: String, logger: Logger) throws {
        self.init(configuration: try PostgresConfiguration(url: url), logger: logger)
    }

    // MARK: - Statements

    /// Runs one statement with `$1`, `$2`, ... bound to `parameters` on a pooled connection.
    public func query(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> PostgresRows {
        try await withConnection { try await $0.query(sql, parameters) }
    }

    /// The same, answering through `completion` instead of a task: the statement runs on a pooled
    /// connection's thread and `completion` is called there, with no hop to or from the Swift
    /// pool (for hot paths that batch requests and answer each through a callback). `completion`
    /// must be short and never block: the connection goes back to the pool just before it runs,
    /// but the thread is held until it returns.
    public func query(
        _ sql: String, _ parameters: [any PostgresEncodable],
        completion: @escaping @Sendable (Result<PostgresRows, any Error>) -> Void
    ) {
        let values = parameters.map(\.postgresValue)
        pool.lease { [pool] leased in
            let connection: PostgresConnection
            switch leased {
            case .success(let lent): connection = lent
            case .failure(let error): return completion(.failure(error))
            }
            let submitted = connection.submit { handle in
                let result = Result { PostgresRows(storage: try handle.execute(sql, values)) }
                Self.giveBackOnItsThread(connection, handle, to: pool)
                completion(result)
            }
            if !submitted {
                _ = pool.release(connection)
                completion(.failure(PostgresError.connectionClosed("the connection is closed")))
            }
        }
    }

    /// Runs one statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> Int {
        try await query(sql, parameters).affectedRows
    }

    /// Lends one connection for `body` (several statements on one session). An open transaction
    /// left behind is rolled back before the connection goes back to the pool.
    public func withConnection<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await pool.lease()
        let result: T
        do {
            result = try await body(connection)
        } catch {
            await giveBack(connection)
            throw error
        }
        await giveBack(connection)
        return result
    }

    /// Runs `body` in a transaction on one connection: `BEGIN`, `body`, `COMMIT`; `ROLLBACK` and
    /// rethrow when `body` throws. Statements inside are never retried.
    public func withTransaction<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            try await connection.withTransaction { try await body($0) }
        }
    }

    // MARK: - Bulk writes

    /// `COPY ... FROM STDIN` of `rows` into `table` (see `PostgresConnection.copy`). All or nothing.
    public func copy<Rows: Sequence & Sendable>(into table: String, columns: [String], rows: Rows) async throws -> Int
    where Rows.Element == [any PostgresEncodable] {
        try await withConnection { try await $0.copy(into: table, columns: columns, rows: rows) }
    }

    /// Multi-row `INSERT` of `rows` in one transaction (see `PostgresConnection.insert`).
    public func insert(into table: String, columns: [String], rows: [[any PostgresEncodable]], suffix: String = "")
        async throws -> Int
    {
        try await withTransaction { try await $0.insert(into: table, columns: columns, rows: rows, suffix: suffix) }
    }

    // MARK: - Health and lifecycle

    /// Succeeds when a pooled connection answers `SELECT 1` (for `/readyz`).
    public func ping() async throws {
        try await withConnection { try await $0.ping() }
    }

    /// Waits until `shutdown()` is called (or the task is cancelled), then closes the pool: what
    /// a `ServiceGroup` runs, so the pool stays open while the services after it still work.
    public func run() async throws {
        _ = try? await stopRequested.wait()
        await shutdown()
    }

    /// Closes every connection and listener; later calls fail with `connectionDoesNotExist`.
    /// Connections lent out right now close when they come back. Returns once the idle ones are
    /// closed (a second call waits for the first).
    public func shutdown() async {
        stopRequested.fulfill(())
        guard !isShutdown.exchange(true, ordering: .acquiringAndReleasing) else {
            _ = try? await closed.wait()
            return
        }
        let stopping = listeners.withLock { listeners in
            defer { listeners = [:] }
            return Array(listeners.values)
        }
        for listener in stopping { listener.stop() }
        for connection in pool.close() { await connection.close() }
        closed.fulfill(())
    }

    // MARK: - Internals

    private func giveBack(_ connection: PostgresConnection) async {
        if connection.needsCleanup { await connection.resetAfterUse() }
        if pool.release(connection) { await connection.close() }
    }

    /// `giveBack` for a job already running on the connection's own thread (the callback `query`).
    private static func giveBackOnItsThread(
        _ connection: PostgresConnection, _ handle: PostgresConnectionHandle,
        to pool: ConnectionPool<PostgresConnection>
    ) {
        if handle.needsCleanup.load(ordering: .relaxed) { handle.resetAfterUse() }
        if pool.release(connection) { connection.closeOnOwnThread() }
    }

    func register(_ listener: PostgresListener) throws {
        try listeners.withLock { listeners in
            guard !isShutdown.load(ordering: .acquiring) else { throw PostgresError.connectionClosed() }
            listeners[ObjectIdentifier(listener)] = listener
        }
    }

    func unregister(_ listener: PostgresListener) {
        _ = listeners.withLock { $0.removeValue(forKey: ObjectIdentifier(listener)) }
    }
}
