import BuzzKitPostgres
import BuzzKitWire

/// A `json`/`jsonb` column's text exactly as PostgreSQL wrote it (always one valid JSON value), to
/// splice into a response without parsing it into `JSONValue` and writing it out again.
struct RawJSON: PostgresDecodable {
    var bytes: [UInt8]

    static func decode(from cell: PostgresCell) throws -> RawJSON {
        RawJSON(bytes: Array(try cell.require(RawJSON.self)))
    }
}

extension SubscriberRoutes {
    /// A subscriber row (`columns`) as its JSON object, written straight from the row's text: the
    /// hot `GET`/`PUT /v1/subscribers/{id}` answer with it, and lists parse it back
    /// (`representation`). Keys are sorted as `JSONWriter` sorts them.
    static func encodedRepresentation(_ row: PostgresRow) throws -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.raw("{\"anonymous\":")
        writer.bool(try row.decode(Bool.self, named: "anonymous"))
        writer.raw(",\"attributes\":")
        if let attributes = try row.decode(RawJSON?.self, named: "attributes") {
            writer.rawBytes(attributes.bytes)
        } else {
            writer.raw("null")
        }
        writer.raw(",\"createdAt\":")
        writeText(try row.decode(String?.self, named: "created_at"), &writer)
        writer.raw(",\"id\":")
        writer.string(try row.decode(String.self, named: "id"))
        writer.raw(",\"locale\":")
        writeText(try row.decode(String?.self, named: "locale"), &writer)
        writer.raw(",\"timezone\":")
        writeText(try row.decode(String?.self, named: "timezone"), &writer)
        writer.raw(",\"updatedAt\":")
        writeText(try row.decode(String?.self, named: "updated_at"), &writer)
        writer.raw("}")
        return writer.bytes
    }

    private static func writeText(_ text: String?, _ writer: inout JSONWriter) {
        if let text { writer.string(text) } else { writer.raw("null") }
    }
}
