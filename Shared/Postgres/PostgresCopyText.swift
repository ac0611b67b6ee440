/// Rows for `COPY ... FROM STDIN` in text format, written field by field straight into bytes,
/// for callers that build many rows on a hot path and send them with
/// `PostgresConnection.copy(into:columns:text:)` (for example inside their own transaction).
///
/// Fields are separated by tabs and rows by newlines; NULL is `\N`; `append` escapes backslash,
/// newline, carriage return and tab. `appendUnescaped` is for text known to hold none of those
/// (numbers, uuids, timestamps): it skips the scan. Each row must have one field per column.
public struct PostgresCopyText: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Rows ended so far.
    public private(set) var rowCount = 0
    private var atRowStart = true

    public init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    public var isEmpty: Bool { rowCount == 0 }

    public mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append(buffer: $0) }
    }

    public mutating func append(bytes field: [UInt8]) {
        field.withUnsafeBufferPointer { append(buffer: $0) }
    }

    /// A field written as is: it must not contain backslash, tab, newline or carriage return.
    public mutating func appendUnescaped(_ text: String) {
        separate()
        bytes.append(contentsOf: text.utf8)
    }

    /// A field written as is from bytes (same rule as `appendUnescaped(_:)`).
    public mutating func appendUnescaped(bytes field: some Sequence<UInt8>) {
        separate()
        bytes.append(contentsOf: field)
    }

    public mutating func appendNull() {
        separate()
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(UInt8(ascii: "N"))
    }

    /// A `timestamptz` field in UTC with microseconds (`2026-03-01 12:00:00.250000+00`).
    public mutating func appendTimestamp(microseconds: Int64) {
        appendUnescaped(bytes: Self.timestamp(microseconds: microseconds))
    }

    /// The text of a `timestamptz` in UTC with microseconds, for a field repeated on many rows.
    public static func timestamp(microseconds: Int64) -> [UInt8] {
        PostgresTimestamp.bytes(microseconds: microseconds)
    }

    /// Hands out the bytes so far and starts over with the same capacity.
    public mutating func takeBytes() -> [UInt8] {
        let capacity = bytes.capacity
        defer {
            bytes = []
            bytes.reserveCapacity(capacity)
            atRowStart = true
        }
        return bytes
    }

    public mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        rowCount += 1
        atRowStart = true
    }

    private mutating func separate() {
        if atRowStart { atRowStart = false } else { bytes.append(UInt8(ascii: "\t")) }
    }

    private mutating func append(buffer field: UnsafeBufferPointer<UInt8>) {
        separate()
        var runStart = 0
        for i in 0..<field.count {
            let replacement: UInt8
            switch field[i] {
            case UInt8(ascii: "\\"): replacement = UInt8(ascii: "\\")
            case UInt8(ascii: "\n"): replacement = UInt8(ascii: "n")
            case UInt8(ascii: "\r"): replacement = UInt8(ascii: "r")
            case UInt8(ascii: "\t"): replacement = UInt8(ascii: "t")
            default: continue
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: field[runStart..<i]))
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(replacement)
            runStart = i + 1
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: field[runStart..<field.count]))
    }
}

extension PostgresConnection {
    /// Writes rows already encoded as `COPY` text (`PostgresCopyText`) into `table` and returns
    /// the number of rows written. Works inside `withTransaction` (the COPY is then part of the
    /// transaction; `COPY` into a table inserts rows in batches, far cheaper than row-by-row
    /// `INSERT`). The COPY is one statement: all rows or none. `table` may be schema-qualified.
    public func copy(into table: String, columns: [String], text: PostgresCopyText) async throws -> Int {
        guard !text.isEmpty else { return 0 }
        let columnList = columns.map(PostgresIdentifier.quote).joined(separator: ", ")
        let sql = "COPY \(PostgresIdentifier.quoteQualified(table)) (\(columnList)) FROM STDIN"
        let handle = handle
        let data = text.bytes
        // One hop to the connection's thread: begin, send, end (abort on a failed send).
        return try await worker.run {
            try handle.beginCopy(sql)
            do {
                try handle.putCopyData(data)
            } catch {
                _ = try? handle.endCopy(abortMessage: "COPY aborted by the client")
                throw error
            }
            return try handle.endCopy(abortMessage: nil)
        }
    }
}
