extension PostgresConnection {
    /// Size of the chunks a COPY hands to libpq; the next chunk is encoded while one is sent.
    static let copyChunkSize = 1 << 20

    /// Writes `rows` into `table` with `COPY ... FROM STDIN` (text format) and returns the number of
    /// rows written. Each row lists its values in `columns` order; `nil`/`.null` is NULL.
    ///
    /// The fastest way to load many rows: rows are encoded in 1 MiB chunks while the previous chunk
    /// is on its way. The COPY is one statement: all rows or none (an error aborts it).
    /// `table` may be schema-qualified (`schema.table`); names are quoted as given.
    public func copy<Rows: Sequence>(into table: String, columns: [String], rows: Rows) async throws -> Int
    where Rows.Element == [any PostgresEncodable] {
        let columnList = columns.map(PostgresIdentifier.quote).joined(separator: ", ")
        let sql = "COPY \(PostgresIdentifier.quoteQualified(table)) (\(columnList)) FROM STDIN"
        let handle = handle
        try await worker.run { try handle.beginCopy(sql) }
        var encoder = PostgresCopyEncoder(capacity: Self.copyChunkSize + (64 << 10))
        var inFlight: Task<Void, any Error>?
        do {
            for row in rows {
                encoder.appendRow(row)
                if encoder.count >= Self.copyChunkSize {
                    let chunk = encoder.take()
                    try await inFlight?.value
                    let worker = worker
                    inFlight = Task { try await worker.run { try handle.putCopyData(chunk) } }
                }
            }
            try await inFlight?.value
            inFlight = nil
            if encoder.count > 0 {
                let chunk = encoder.take()
                try await worker.run { try handle.putCopyData(chunk) }
            }
            return try await worker.run { try handle.endCopy(abortMessage: nil) }
        } catch {
            _ = try? await inFlight?.value
            _ = try? await worker.run { try handle.endCopy(abortMessage: "COPY aborted by the client") }
            throw error
        }
    }

    /// Inserts `rows` with multi-row `INSERT ... VALUES ($1, $2), ($3, $4), ...` statements of at
    /// most 1000 rows (and 65535 parameters) each; returns the number of rows inserted. Use it
    /// where COPY does not fit (e.g. with `ON CONFLICT`, passed as `suffix`). Each statement is
    /// atomic; run it in `withTransaction` to make the whole call atomic.
    public func insert(
        into table: String, columns: [String], rows: [[any PostgresEncodable]], suffix: String = ""
    ) async throws -> Int {
        guard !columns.isEmpty else { return 0 }
        let perStatement = max(1, min(1000, 65535 / columns.count))
        let head =
            "INSERT INTO \(PostgresIdentifier.quoteQualified(table)) (\(columns.map(PostgresIdentifier.quote).joined(separator: ", "))) VALUES "
        var total = 0
        var start = 0
        while start < rows.count {
            let batch = rows[start..<min(start + perStatement, rows.count)]
            var sql = head
            var parameters: [any PostgresEncodable] = []
            parameters.reserveCapacity(batch.count * columns.count)
            for (r, row) in batch.enumerated() {
                precondition(row.count == columns.count, "each row needs one value per column")
                sql += r == 0 ? "(" : ", ("
                for c in 0..<columns.count {
                    if c > 0 { sql += ", " }
                    sql += "$\(r * columns.count + c + 1)"
                }
                sql += ")"
                parameters.append(contentsOf: row)
            }
            if !suffix.isEmpty { sql += " " + suffix }
            total += try await execute(sql, parameters)
            start += batch.count
        }
        return total
    }
}
