import BuzzKitCore

/// Header fields many requests share (an APNs chunk: the same token, topic, push type,
/// priority and collapse id for a few hundred pushes), made once and referenced by each request.
///
/// Fields marked `neverIndexed` go out as HPACK "never indexed" literals: values unique to one
/// request (a device path, an id) would only churn the connection's dynamic table. Every other
/// field is indexed, so a long value repeated on a connection (a JWT) costs a byte or two after
/// its first request.
public final class HTTP2HeaderBlock: Sendable {
    /// One field, lower-case name, as bytes.
    struct Field: Sendable {
        var name: [UInt8]
        var value: [UInt8]
        var neverIndexed: Bool
    }

    let fields: [Field]

    public init(_ headers: HTTPHeaders, neverIndexed: Set<String> = []) {
        fields = headers.map { field in
            let name = field.name.lowercased()
            return Field(
                name: Array(name.utf8), value: Array(field.value.utf8), neverIndexed: neverIndexed.contains(name))
        }
    }

    /// No fields.
    public static let empty = HTTP2HeaderBlock(HTTPHeaders())

    public var count: Int { fields.count }
}
