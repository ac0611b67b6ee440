internal import CLibPQ

/// Owns one `PGresult`. A result is read-only once libpq hands it over, and libpq documents that it
/// may then be read from any thread; `PQclear` runs once, in `deinit`. That is why this class is
/// `@unchecked Sendable`: nothing ever mutates the handle.
final class PostgresResultStorage: @unchecked Sendable {
    let handle: OpaquePointer
    let rowCount: Int
    let columnNames: [String]
    let columnTypes: [UInt32]
    let affectedRows: Int
    let commandTag: String

    init(_ handle: OpaquePointer) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        let columns = Int(PQnfields(handle))
        columnNames = (0..<columns).map { String(cString: PQfname(handle, Int32($0))) }
        columnTypes = (0..<columns).map { UInt32(PQftype(handle, Int32($0))) }
        let tuples = String(cString: PQcmdTuples(handle))
        affectedRows = Int(tuples) ?? rowCount
        commandTag = String(cString: PQcmdStatus(handle))
    }

    deinit { PQclear(handle) }

    func withCell<T>(row: Int, column: Int, _ body: (PostgresCell) throws -> T) rethrows -> T {
        let type = columnTypes[column]
        if PQgetisnull(handle, Int32(row), Int32(column)) == 1 {
            return try body(PostgresCell(bytes: nil, typeOID: type))
        }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        let pointer = PQgetvalue(handle, Int32(row), Int32(column))
        return try body(PostgresCell(bytes: UnsafeRawBufferPointer(start: pointer, count: length), typeOID: type))
    }
}

/// The rows a statement returned, decoded lazily column by column.
///
/// A random-access collection of `PostgresRow`; `affectedRows` is the count from the command tag
/// (`INSERT 0 5` -> 5) or the number of rows for a `SELECT`.
public struct PostgresRows: RandomAccessCollection, Sendable {
    let storage: PostgresResultStorage

    init(storage: PostgresResultStorage) { self.storage = storage }

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.rowCount }
    public subscript(position: Int) -> PostgresRow { PostgresRow(storage: storage, index: position) }

    /// Column names in result order.
    public var columns: [String] { storage.columnNames }
    /// Column type OIDs in result order (see `PostgresTypeOID`).
    public var columnTypes: [UInt32] { storage.columnTypes }
    public var affectedRows: Int { storage.affectedRows }
    /// The command tag without counts' meaning attached: `SELECT 3`, `INSERT 0 1`, `COMMIT`.
    public var commandTag: String { storage.commandTag }
}

/// One result row. Decode by position or name:
/// `try row.decode(String.self, at: 0)`, `try row["name", as: String.self]`,
/// `let (id, name) = try row.decode((UUID, String?).self)`.
public struct PostgresRow: Sendable {
    let storage: PostgresResultStorage
    public let index: Int

    public var columnCount: Int { storage.columnNames.count }
    public var columns: [String] { storage.columnNames }

    /// The value at column `column` (0-based) as `T`; NULL needs an optional `T`.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, at column: Int) throws -> T {
        guard column >= 0, column < storage.columnNames.count else {
            throw PostgresDecodingError(
                code: .columnOutOfRange, targetType: String(describing: T.self), columnIndex: column)
        }
        do {
            return try storage.withCell(row: index, column: column) { try T.decode(from: $0) }
        } catch var error as PostgresDecodingError {
            error.column = storage.columnNames[column]
            error.columnIndex = column
            error.postgresType = storage.columnTypes[column]
            error.targetType = String(describing: T.self)
            throw error
        }
    }

    /// The value of the column named `name` (the first one, if several share it).
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, named name: String) throws -> T {
        guard let column = storage.columnNames.firstIndex(of: name) else {
            throw PostgresDecodingError(code: .columnNotFound, targetType: String(describing: T.self), column: name)
        }
        return try decode(T.self, at: column)
    }

    public subscript<T: PostgresDecodable>(name: String, as type: T.Type) -> T {
        get throws { try decode(T.self, named: name) }
    }

    public subscript<T: PostgresDecodable>(column: Int, as type: T.Type) -> T {
        get throws { try decode(T.self, at: column) }
    }

    /// The first columns of the row as a tuple: `try row.decode((UUID, String?, Int).self)`.
    public func decode<each T: PostgresDecodable>(_ types: (repeat each T).Type) throws -> (repeat each T) {
        var column = 0
        func next<U: PostgresDecodable>(_ type: U.Type) throws -> U {
            defer { column += 1 }
            return try decode(U.self, at: column)
        }
        return (repeat try next((each T).self))
    }

    /// Whether column `column` is NULL.
    public func isNull(at column: Int) -> Bool {
        storage.withCell(row: index, column: column) { $0.bytes == nil }
    }
}
