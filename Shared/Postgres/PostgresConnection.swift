import BuzzKitCore
import Synchronization

/// One PostgreSQL connection, confined to its own thread.
///
/// All libpq calls for this connection run on a dedicated `WorkerThread` (Core); the async
/// methods hand work to it and resume when it is done, so nothing blocks Swift's cooperative pool.
/// The connection opens lazily on first use and reopens itself when it is found broken; a
/// statement whose send failed outside a transaction is retried once on the fresh connection.
/// Usually you get one from `PostgresClient.withConnection` or `withTransaction`; make your own
/// with `connect(configuration:logger:)` and `close()` it.
public final class PostgresConnection: Sendable {
    public let configuration: PostgresConfiguration
    let logger: Logger
    let worker: WorkerThread
    let handle: PostgresConnectionHandle

    init(configuration: PostgresConfiguration, logger: Logger, name: String) {
        self.configuration = configuration
        self.logger = logger
        worker = WorkerThread(name: name, stackSize: 1 << 20)
        handle = PostgresConnectionHandle(configuration: configuration, logger: logger)
    }

    /// Opens a standalone connection (outside any pool). Close it with `close()`.
    public static func connect(configuration: PostgresConfiguration, logger: Logger) async throws -> PostgresConnection
    {
        let connection = PostgresConnection(configuration: configuration, logger: logger, name: "postgres-conn")
        do {
            try await connection.worker.run { [handle = connection.handle] in try handle.connect() }
        } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    // MARK: - Statements

    /// Runs one statement with `$1`, `$2`, ... bound to `parameters` and returns its rows.
    public func query(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> PostgresRows {
        let values = parameters.map(\.postgresValue)
        let handle = handle
        let storage = try await worker.run { try handle.execute(sql, values) }
        return PostgresRows(storage: storage)
    }

    /// Runs one statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> Int {
        try await query(sql, parameters).affectedRows
    }

    /// Runs SQL text that may hold several `;`-separated statements (simple protocol, no
    /// parameters): migrations and setup scripts.
    public func executeScript(_ sql: String) async throws {
        let handle = handle
        try await worker.run { try handle.executeScript(sql) }
    }

    /// `BEGIN`, `body`, `COMMIT`; `ROLLBACK` and rethrow when `body` throws. A `COMMIT` the server
    /// turns into a rollback (a statement inside failed and was caught) throws `inFailedTransaction`.
    public func withTransaction<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await execute("BEGIN")
        let result: T
        do {
            result = try await body(self)
        } catch {
            do { try await execute("ROLLBACK") } catch {
                logger.debug("postgres.rollback.failed", metadata: ["error": "\(error)"])
            }
            throw error
        }
        let commit = try await query("COMMIT")
        if commit.commandTag == "ROLLBACK" {
            throw PostgresError(
                code: .inFailedTransaction, message: "the transaction was rolled back because a statement in it failed")
        }
        return result
    }

    /// Reports whether the connection answers (`SELECT 1`), reopening it if needed.
    public func ping() async throws {
        _ = try await query("SELECT 1")
    }

    /// Closes the connection and ends its thread. Later calls fail with `connectionDoesNotExist`.
    public func close() async {
        let handle = handle
        _ = try? await worker.run { handle.close() }
        worker.stop()
    }

    // MARK: - Pool support

    var needsCleanup: Bool { handle.needsCleanup.load(ordering: .relaxed) }

    /// Runs `job` with the handle on this connection's thread; false (nothing run) when the
    /// connection is closed. For callers answering through callbacks (`PostgresClient.query(_:_:completion:)`).
    func submit(_ job: @escaping @Sendable (PostgresConnectionHandle) -> Void) -> Bool {
        let handle = handle
        return worker.submit { job(handle) }
    }

    /// `close()` for code already running on this connection's thread (a `submit` job).
    func closeOnOwnThread() {
        handle.close()
        worker.stop()
    }

    func resetAfterUse() async {
        let handle = handle
        _ = try? await worker.run { handle.resetAfterUse() }
    }
}
