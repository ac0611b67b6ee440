import BuzzKitCore
internal import CLibPQ
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The `PGconn` of one connection and everything that touches it.
///
/// `@unchecked Sendable` because every method except `needsCleanup` runs on the owning
/// connection's `WorkerThread` only (the connection submits all work there), so `conn` is
/// never touched by two threads. `needsCleanup` is an `Atomic`, readable from anywhere.
final class PostgresConnectionHandle: @unchecked Sendable {
    private let configuration: PostgresConfiguration
    private let logger: Logger
    private var conn: OpaquePointer?
    /// True when the connection was left inside a transaction or broken, so the pool must clean it
    /// up (ROLLBACK or reopen) before lending it again.
    let needsCleanup = Atomic<Bool>(false)

    init(configuration: PostgresConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    deinit { if let conn { PQfinish(conn) } }

    /// The send of a statement failed: it never reached the server, so a retry is safe.
    private struct SendFailure: Error { var message: String }

    // MARK: - Connecting

    func connect() throws {
        close()
        let pairs = configuration.libpqParameters
        var keywords = pairs.map { strdup($0.0) } + [nil]
        var values = pairs.map { strdup($0.1) } + [nil]
        defer {
            for keyword in keywords { free(keyword) }
            for value in values { free(value) }
        }
        let connection = keywords.withUnsafeMutableBufferPointer { k in
            values.withUnsafeMutableBufferPointer { v in
                k.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: k.count) { kp in
                    v.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: v.count) { vp in
                        PQconnectdbParams(kp, vp, 0)
                    }
                }
            }
        }
        guard let connection else {
            throw PostgresError(code: .unableToConnect, message: "out of memory creating a libpq connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(connection))
            PQfinish(connection)
            logger.debug("postgres.connect.failed", metadata: ["postgres.host": configuration.host, "error": message])
            throw PostgresError(code: .unableToConnect, message: message)
        }
        conn = connection
        preparedStatements.removeAll()
        recentStatements.removeAll()
        needsCleanup.store(false, ordering: .relaxed)
    }

    func close() {
        if let conn { PQfinish(conn) }
        conn = nil
        preparedStatements.removeAll()
        recentStatements.removeAll()
    }

    // MARK: - Prepared statements

    /// Statements with parameters are prepared once per connection and executed by name after:
    /// parsing and planning an unnamed statement every time costs the server more than half of a
    /// simple query (pgbench here: 29k/s extended vs 71k/s prepared). Keyed by SQL text and
    /// parameter types; at most `maxPreparedStatements` per connection (beyond, the statement
    /// runs unnamed), forgotten when the connection is reopened.
    static let maxPreparedStatements = 512
    private var preparedStatements: [String: String] = [:]
    private var nextStatementNumber = 0
    /// The statements last looked up, by where their SQL text lies: a service's statements are
    /// constants, so the same text comes back in the same storage, found without hashing it (a
    /// ledger statement is several kB) and confirmed by `==`, which for the same storage is a
    /// pointer comparison. A text in other storage with the same address and length (freed and
    /// reused) is compared in full and, if it differs, looked up by its text.
    private var recentStatements: [RecentKey: (sql: String, types: [Oid], name: String)] = [:]

    private struct RecentKey: Hashable {
        var address: UInt
        var count: Int
    }

    /// The name of the prepared statement for `sql`, preparing it on first use; nil when the
    /// cache is full. A statement that cannot be prepared throws its error, as running it would.
    private func preparedStatement(_ conn: OpaquePointer, _ sql: String, _ types: [Oid]) throws -> String? {
        let recentKey = sql.utf8.withContiguousStorageIfAvailable {
            RecentKey(address: UInt(bitPattern: $0.baseAddress), count: $0.count)
        }
        if let recentKey, let recent = recentStatements[recentKey], recent.types == types, recent.sql == sql {
            return recent.name
        }
        guard let name = try preparedStatement(byText: conn, sql, types) else { return nil }
        if let recentKey {
            if recentStatements.count >= 64 { recentStatements.removeAll() }
            recentStatements[recentKey] = (sql, types, name)
        }
        return name
    }

    /// `preparedStatement` by the statement's text and types.
    private func preparedStatement(byText conn: OpaquePointer, _ sql: String, _ types: [Oid]) throws -> String? {
        let key = types.map { String($0) }.joined(separator: ",") + "\u{0}" + sql
        if let name = preparedStatements[key] { return name }
        guard preparedStatements.count < Self.maxPreparedStatements else { return nil }
        let name = "bk_\(nextStatementNumber)"
        nextStatementNumber += 1
        let sent = types.withUnsafeBufferPointer { PQsendPrepare(conn, name, sql, Int32(types.count), $0.baseAddress) }
        guard sent == 1 else { throw SendFailure(message: Self.trimmed(PQerrorMessage(conn))) }
        _ = try collectResult(conn)
        preparedStatements[key] = name
        return name
    }

    /// Forgets prepared statements the server no longer accepts (a schema change altered a
    /// result type, or the statement is gone): the next use prepares them again.
    private func forgetPreparedStatements(after error: PostgresError) {
        if error.code.rawValue == "0A000" || error.code.rawValue == "26000" {
            preparedStatements.removeAll()
            recentStatements.removeAll()
        }
    }

    var isOpen: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    // MARK: - Statements

    /// Runs one parameterised statement (extended protocol, one statement only).
    func execute(_ sql: String, _ values: [PostgresValue]) throws -> PostgresResultStorage {
        try withSafeRetry { conn in try self.send(conn, sql, values) }
    }

    /// Runs SQL text through the simple protocol: several `;`-separated statements, no parameters.
    func executeScript(_ sql: String) throws {
        _ = try withSafeRetry { conn -> PostgresResultStorage in
            guard PQsendQuery(conn, sql) == 1 else { throw SendFailure(message: Self.trimmed(PQerrorMessage(conn))) }
            return try self.collectResult(conn)
        }
    }

    /// Cleans up after a lease: rolls back an open transaction, drops a broken connection.
    func resetAfterUse() {
        defer { updateCleanupFlag() }
        guard let conn else { return }
        guard PQstatus(conn) == CONNECTION_OK else {
            close()
            return
        }
        if PQtransactionStatus(conn) != PQTRANS_IDLE {
            if let result = PQexec(conn, "ROLLBACK") { PQclear(result) }
            if PQtransactionStatus(conn) != PQTRANS_IDLE { close() }
        }
    }

    // MARK: - COPY FROM STDIN

    func beginCopy(_ sql: String) throws {
        _ = try withSafeRetry { conn -> Void in
            guard PQsendQuery(conn, sql) == 1 else { throw SendFailure(message: Self.trimmed(PQerrorMessage(conn))) }
            guard let result = PQgetResult(conn) else { throw Self.connectionError(conn) }
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COPY_IN else {
                let error = Self.error(from: result, conn)
                while let extra = PQgetResult(conn) { PQclear(extra) }
                throw error
            }
        }
    }

    func putCopyData(_ bytes: [UInt8]) throws {
        guard let conn else { throw PostgresError(code: .connectionFailure, message: "no connection") }
        let ok = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                PQputCopyData(conn, $0, Int32(buffer.count))
            }
        }
        guard ok == 1 else { throw Self.connectionError(conn) }
    }

    /// Ends the COPY (`abortMessage` non-nil aborts it) and returns the number of rows written.
    func endCopy(abortMessage: String?) throws -> Int {
        guard let conn else { throw PostgresError(code: .connectionFailure, message: "no connection") }
        defer { updateCleanupFlag() }
        guard PQputCopyEnd(conn, abortMessage) == 1 else { throw Self.connectionError(conn) }
        return try collectResult(conn).affectedRows
    }

    // MARK: - LISTEN

    /// Waits up to `timeoutMilliseconds` for notifications on this (listening) connection.
    /// Throws when the connection is gone.
    func waitForNotifications(timeoutMilliseconds: Int32) throws -> [PostgresNotification] {
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            throw PostgresError(code: .connectionFailure, message: "the listening connection is closed")
        }
        var received: [PostgresNotification] = []
        func drain() {
            while let notification = PQnotifies(conn) {
                let n = notification.pointee
                received.append(
                    PostgresNotification(
                        channel: String(cString: n.relname), payload: n.extra.map { String(cString: $0) } ?? "",
                        processID: Int32(n.be_pid)))
                PQfreemem(notification)
            }
        }
        drain()
        if !received.isEmpty { return received }
        let fd = PQsocket(conn)
        guard fd >= 0 else {
            throw PostgresError(code: .connectionFailure, message: "the listening connection has no socket")
        }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, timeoutMilliseconds) > 0 {
            guard PQconsumeInput(conn) == 1, PQstatus(conn) == CONNECTION_OK else { throw Self.connectionError(conn) }
            drain()
        }
        return received
    }

    // MARK: - Internals

    /// Runs `body` on a healthy connection. A connection found dead while idle is reopened first;
    /// when the send itself fails outside a transaction (nothing reached the server) the
    /// connection is reopened and `body` runs once more.
    private func withSafeRetry<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        defer { updateCleanupFlag() }
        let retrySafe = try prepareForStatement()
        guard let conn else { throw PostgresError(code: .connectionFailure, message: "no connection") }
        do {
            return try body(conn)
        } catch let failure as SendFailure {
            guard retrySafe else { throw PostgresError(code: .connectionFailure, message: failure.message) }
            logger.warning("postgres.reconnect", metadata: ["reason": "send failed", "error": failure.message])
            try connect()
            guard let fresh = self.conn else { throw PostgresError(code: .connectionFailure, message: "no connection") }
            do {
                return try body(fresh)
            } catch let again as SendFailure {
                throw PostgresError(code: .connectionFailure, message: again.message)
            }
        }
    }

    /// Opens or reopens the connection when that is safe; returns whether a retry would be safe
    /// (no transaction open on this connection).
    private func prepareForStatement() throws -> Bool {
        guard let conn else {
            try connect()
            return true
        }
        let healthy = PQstatus(conn) == CONNECTION_OK
        let transaction = PQtransactionStatus(conn)
        if healthy, transaction == PQTRANS_INTRANS || transaction == PQTRANS_INERROR || transaction == PQTRANS_ACTIVE {
            return false  // inside a transaction: run as is, never retry
        }
        if healthy, !idleSocketIsDead(conn) { return true }
        if wasInTransaction {
            // A transaction was open when the connection died: its work is gone; say so.
            close()
            wasInTransaction = false
            throw PostgresError(code: .connectionFailure, message: "the connection was lost inside a transaction")
        }
        logger.warning("postgres.reconnect", metadata: ["reason": "connection found closed"])
        try connect()
        return true
    }

    /// Whether the connection was inside a transaction after the last statement.
    private var wasInTransaction = false

    /// Reads whatever an idle connection has pending (a server going away sends an error and
    /// closes); true when that shows the connection is gone.
    private func idleSocketIsDead(_ conn: OpaquePointer) -> Bool {
        let fd = PQsocket(conn)
        guard fd >= 0 else { return true }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var rounds = 0
        while rounds < 16, poll(&descriptor, 1, 0) > 0 {
            if PQconsumeInput(conn) == 0 || PQstatus(conn) != CONNECTION_OK { return true }
            while let notification = PQnotifies(conn) { PQfreemem(notification) }
            rounds += 1
        }
        return PQstatus(conn) != CONNECTION_OK
    }

    private func updateCleanupFlag() {
        guard let conn else {
            needsCleanup.store(false, ordering: .relaxed)
            wasInTransaction = false
            return
        }
        let transaction = PQtransactionStatus(conn)
        wasInTransaction = transaction == PQTRANS_INTRANS || transaction == PQTRANS_INERROR
        needsCleanup.store(PQstatus(conn) != CONNECTION_OK || transaction != PQTRANS_IDLE, ordering: .relaxed)
    }

    private func send(
        _ conn: OpaquePointer, _ sql: String, _ values: [PostgresValue],
        isRetry: Bool = false
    ) throws -> PostgresResultStorage {
        let count = values.count
        let types = values.map { Oid($0.typeOID) }
        let lengths = values.map { Int32($0.bytes?.count ?? 0) }
        let formats = values.map { $0.format.rawValue }
        let pointers: [UnsafePointer<CChar>?] = values.map { value in
            guard let bytes = value.bytes else { return nil }
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            bytes.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(start: pointer, count: bytes.count).copyMemory(from: source)
            }
            pointer[bytes.count] = 0
            return UnsafePointer(pointer)
        }
        defer { for pointer in pointers { pointer.map { UnsafeMutablePointer(mutating: $0).deallocate() } } }
        let statement = count > 0 ? try preparedStatement(conn, sql, types) : nil
        let sent = types.withUnsafeBufferPointer { t in
            lengths.withUnsafeBufferPointer { l in
                formats.withUnsafeBufferPointer { f in
                    pointers.withUnsafeBufferPointer { v in
                        if let statement {
                            PQsendQueryPrepared(
                                conn, statement, Int32(count), v.baseAddress, l.baseAddress, f.baseAddress, 0)
                        } else {
                            PQsendQueryParams(
                                conn, sql, Int32(count), t.baseAddress, v.baseAddress, l.baseAddress, f.baseAddress, 0)
                        }
                    }
                }
            }
        }
        guard sent == 1 else { throw SendFailure(message: Self.trimmed(PQerrorMessage(conn))) }
        do {
            return try collectResult(conn)
        } catch let error as PostgresError where statement != nil {
            forgetPreparedStatements(after: error)
            // "cached plan must not change result type" (a column was added since it was prepared):
            // outside a transaction nothing happened yet, so prepare it again and run it once more.
            if !isRetry, error.code.rawValue == "0A000", PQtransactionStatus(conn) == PQTRANS_IDLE {
                return try send(conn, sql, values, isRetry: true)
            }
            throw error
        }
    }

    /// Reads results until libpq has none left; the first error wins, else the last result.
    private func collectResult(_ conn: OpaquePointer) throws -> PostgresResultStorage {
        var kept: OpaquePointer?
        var failure: PostgresError?
        while let result = PQgetResult(conn) {
            switch PQresultStatus(result) {
            case PGRES_FATAL_ERROR, PGRES_BAD_RESPONSE, PGRES_NONFATAL_ERROR:
                if failure == nil { failure = Self.error(from: result, conn) }
                PQclear(result)
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                // A COPY started through query(): end it so the connection stays usable.
                PQclear(result)
                _ = PQputCopyEnd(conn, "COPY is only supported through copy(into:columns:rows:)")
            default:
                if let kept { PQclear(kept) }
                kept = result
            }
        }
        if let failure {
            if let kept { PQclear(kept) }
            throw failure
        }
        guard let kept else { throw Self.connectionError(conn) }
        return PostgresResultStorage(kept)
    }

    private static func error(from result: OpaquePointer, _ conn: OpaquePointer) -> PostgresError {
        func field(_ code: Int32) -> String? {
            guard let value = PQresultErrorField(result, code) else { return nil }
            return String(cString: value)
        }
        guard let state = field(Int32(UInt8(ascii: "C"))) else {
            // No SQLSTATE: libpq itself failed (connection lost).
            let message = trimmed(PQresultErrorMessage(result))
            return PostgresError(
                code: .connectionFailure, message: message.isEmpty ? trimmed(PQerrorMessage(conn)) : message)
        }
        var error = PostgresError(
            code: SQLState(rawValue: state), message: field(Int32(UInt8(ascii: "M"))) ?? "",
            detail: field(Int32(UInt8(ascii: "D"))), hint: field(Int32(UInt8(ascii: "H"))))
        error.schema = field(Int32(UInt8(ascii: "s")))
        error.table = field(Int32(UInt8(ascii: "t")))
        error.column = field(Int32(UInt8(ascii: "c")))
        error.constraint = field(Int32(UInt8(ascii: "n")))
        return error
    }

    private static func connectionError(_ conn: OpaquePointer) -> PostgresError {
        PostgresError(code: .connectionFailure, message: trimmed(PQerrorMessage(conn)))
    }

    static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
