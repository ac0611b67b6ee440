/// Builds `COPY ... FROM STDIN` text-format data from encodable values, row by row, in chunks
/// (`take()`); the format itself is `PostgresCopyText`'s.
struct PostgresCopyEncoder {
    private var text: PostgresCopyText

    init(capacity: Int) { text = PostgresCopyText(capacity: capacity) }

    var count: Int { text.bytes.count }

    mutating func appendRow(_ values: [any PostgresEncodable]) {
        for value in values {
            if let field = value.postgresText { text.append(field) } else { text.appendNull() }
        }
        text.endRow()
    }

    /// Hands out the bytes so far and starts over.
    mutating func take() -> [UInt8] { text.takeBytes() }
}
