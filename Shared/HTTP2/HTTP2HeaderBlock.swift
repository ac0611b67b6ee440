import BuzzKitCore

/// Header fields many requests share (an APNs chunk: the same token, topic, push type,
/// priority and collapse id for a few hundred pushes), made once and referenced by each request.
///
/// Fields marked `neverIndexed` go out as HPACK "never indexed" literals: values unique to one
/// request (a device path, an id) would only churn the connection's dynamic table. Every other
/// field is indexed, so a long value repeated on a connection (a JWT) costs a byte or two after
/// its first request.
///
/// The fields are kept as one run of bytes (names and values back to back) and a table of where
/// each lies: submitting a request copies the whole block into the loop's scratch space at once,
/// instead of one copy and two reference counts per field.
public final class HTTP2HeaderBlock: Sendable {
    /// Where one field lies in `bytes`, lower-case name then value.
    struct Field: Sendable {
        var nameOffset: Int
        var nameLength: Int
        var valueOffset: Int
        var valueLength: Int
        var neverIndexed: Bool
    }

    let bytes: [UInt8]
    let fields: [Field]

    public init(_ headers: HTTPHeaders, neverIndexed: Set<String> = []) {
        var bytes: [UInt8] = []
        var fields: [Field] = []
        fields.reserveCapacity(headers.count)
        for field in headers {
            let name = field.name.lowercased()
            let nameOffset = bytes.count
            bytes.append(contentsOf: name.utf8)
            let valueOffset = bytes.count
            bytes.append(contentsOf: field.value.utf8)
            fields.append(
                Field(
                    nameOffset: nameOffset, nameLength: valueOffset - nameOffset, valueOffset: valueOffset,
                    valueLength: bytes.count - valueOffset, neverIndexed: neverIndexed.contains(name)))
        }
        self.bytes = bytes
        self.fields = fields
    }

    /// No fields.
    public static let empty = HTTP2HeaderBlock(HTTPHeaders())

    public var count: Int { fields.count }
}
