internal import CSQLite
import Foundation

/// A value bound to or read from a SQLite statement.
enum SQLiteValue: Sendable, Hashable {
    case null
    case int(Int64)
    case text(String)
    case double(Double)

    var int: Int64? { if case .int(let v) = self { return v } else { return nil } }
    var text: String? { if case .text(let v) = self { return v } else { return nil } }
}

/// One SQLite connection in WAL mode, confined to its own serial queue.
///
/// Every call runs on `queue` (never on Swift's cooperative pool) and is bridged back with a
/// continuation. `@unchecked Sendable`: the `sqlite3*` handle is touched only from `queue`, and
/// `queue` is serial, so no two threads ever use it at once. WAL lets the app and the
/// notification service extension share one database file in the app group container;
/// `busy_timeout` makes a writer wait for the other process's lock instead of failing.
final class SQLiteDatabase: @unchecked Sendable {
    private let handle: OpaquePointer
    private let queue: DispatchQueue
    let path: String

    init(path: String) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message)
        }
        handle = db
        self.path = path
        queue = DispatchQueue(label: "dev.buzzkit.sqlite")
        sqlite3_busy_timeout(db, 5_000)
        try Self.execute(db, "PRAGMA journal_mode=WAL")
        try Self.execute(db, "PRAGMA synchronous=NORMAL")
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs `body` on the connection's queue and returns its result.
    @discardableResult
    func run<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [self] in
                do { continuation.resume(returning: try body(Connection(handle: self.handle))) } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Runs `body` synchronously on the queue (setup and the extension's short paths only).
    func runSync<T>(_ body: (Connection) throws -> T) throws -> T {
        try queue.sync { try body(Connection(handle: handle)) }
    }

    private static func execute(_ db: OpaquePointer, _ sql: String) throws(SQLiteError) {
        var error: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &error)
        guard rc == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "exec failed"
            sqlite3_free(error)
            throw SQLiteError(code: rc, message: message)
        }
    }

    /// The connection as seen inside `run`: only valid on the queue, for the call's duration.
    struct Connection {
        fileprivate let handle: OpaquePointer

        func execute(_ sql: String) throws(SQLiteError) { try SQLiteDatabase.execute(handle, sql) }

        /// Runs one statement with `parameters` bound as `?1, ?2, ...`; returns its rows.
        @discardableResult
        func query(_ sql: String, _ parameters: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
            var statement: OpaquePointer?
            var rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
            guard rc == SQLITE_OK, let statement else { throw lastError(rc) }
            defer { sqlite3_finalize(statement) }
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            for (index, value) in parameters.enumerated() {
                let position = Int32(index + 1)
                switch value {
                case .null: rc = sqlite3_bind_null(statement, position)
                case .int(let v): rc = sqlite3_bind_int64(statement, position, v)
                case .double(let v): rc = sqlite3_bind_double(statement, position, v)
                case .text(let v): rc = sqlite3_bind_text(statement, position, v, -1, transient)
                }
                guard rc == SQLITE_OK else { throw lastError(rc) }
            }
            var rows: [[SQLiteValue]] = []
            while true {
                rc = sqlite3_step(statement)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw lastError(rc) }
                let columns = sqlite3_column_count(statement)
                var row: [SQLiteValue] = []
                row.reserveCapacity(Int(columns))
                for column in 0..<columns {
                    switch sqlite3_column_type(statement, column) {
                    case SQLITE_INTEGER: row.append(.int(sqlite3_column_int64(statement, column)))
                    case SQLITE_FLOAT: row.append(.double(sqlite3_column_double(statement, column)))
                    case SQLITE_NULL: row.append(.null)
                    default:
                        if let text = sqlite3_column_text(statement, column) {
                            row.append(.text(String(cString: text)))
                        } else {
                            row.append(.null)
                        }
                    }
                }
                rows.append(row)
            }
            return rows
        }

        /// Runs `body` in one `BEGIN IMMEDIATE ... COMMIT` (rolled back when it throws).
        func transaction<T>(_ body: () throws -> T) throws -> T {
            try execute("BEGIN IMMEDIATE")
            do {
                let result = try body()
                try execute("COMMIT")
                return result
            } catch {
                try? execute("ROLLBACK")
                throw error
            }
        }

        private func lastError(_ rc: Int32) -> SQLiteError {
            SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)))
        }
    }
}
