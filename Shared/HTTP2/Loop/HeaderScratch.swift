internal import CNghttp2

/// Where the loop lays out one request's header fields for `nghttp2_submit_request`, which copies
/// them: one arena of bytes and one array of `nghttp2_nv`, both reused for every request, so
/// submitting costs no allocation.
final class HeaderScratch {
    static let method = Array(":method".utf8)
    static let scheme = Array(":scheme".utf8)
    static let authority = Array(":authority".utf8)
    static let path = Array(":path".utf8)
    static let https = Array("https".utf8)

    private var bytes: UnsafeMutablePointer<UInt8>
    private var capacity = 4096
    private var used = 0
    /// (name offset, name length, value offset, value length, flags) per field.
    private var fields: [(Int, Int, Int, Int, UInt8)] = []
    private var headers: UnsafeMutablePointer<nghttp2_nv>
    private var headerCapacity = 32

    init() {
        bytes = .allocate(capacity: capacity)
        headers = .allocate(capacity: headerCapacity)
        fields.reserveCapacity(headerCapacity)
    }

    deinit {
        bytes.deallocate()
        headers.deallocate()
    }

    func reset() {
        used = 0
        fields.removeAll(keepingCapacity: true)
    }

    func add(_ name: [UInt8], _ value: [UInt8], indexed: Bool) {
        let nameOffset = append(name)
        let valueOffset = append(value)
        fields.append((nameOffset, name.count, valueOffset, value.count, Self.flags(indexed)))
    }

    func add(_ name: [UInt8], _ value: String, indexed: Bool) {
        let nameOffset = append(name)
        var value = value
        let valueOffset = value.withUTF8 { append($0) }
        fields.append((nameOffset, name.count, valueOffset, value.utf8.count, Self.flags(indexed)))
    }

    func add(_ name: String, _ value: String, indexed: Bool) {
        var name = name
        var value = value
        let nameOffset = name.withUTF8 { append($0) }
        let valueOffset = value.withUTF8 { append($0) }
        fields.append((nameOffset, name.utf8.count, valueOffset, value.utf8.count, Self.flags(indexed)))
    }

    /// Every field of `block`, its bytes copied at once.
    func add(_ block: HTTP2HeaderBlock) {
        guard !block.fields.isEmpty else { return }
        let base = append(block.bytes)
        for field in block.fields {
            fields.append(
                (
                    base + field.nameOffset, field.nameLength, base + field.valueOffset, field.valueLength,
                    Self.flags(!field.neverIndexed)
                ))
        }
    }

    /// Calls `body` with the fields as `nghttp2_nv`s (valid only during the call).
    func withHeaders<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        if fields.count > headerCapacity {
            headers.deallocate()
            headerCapacity = fields.count * 2
            headers = .allocate(capacity: headerCapacity)
        }
        for (index, field) in fields.enumerated() {
            headers[index] = nghttp2_nv(
                name: bytes + field.0, value: bytes + field.2, namelen: field.1, valuelen: field.3, flags: field.4)
        }
        return body(headers, fields.count)
    }

    private static func flags(_ indexed: Bool) -> UInt8 {
        indexed ? UInt8(NGHTTP2_NV_FLAG_NONE.rawValue) : UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
    }

    private func append(_ source: [UInt8]) -> Int {
        source.withUnsafeBufferPointer { append($0) }
    }

    private func append(_ source: UnsafeBufferPointer<UInt8>) -> Int {
        let offset = used
        reserve(source.count)
        if let base = source.baseAddress { (bytes + used).update(from: base, count: source.count) }
        used += source.count
        return offset
    }

    private func reserve(_ extra: Int) {
        guard used + extra > capacity else { return }
        var bigger = capacity * 2
        while bigger < used + extra { bigger *= 2 }
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: bigger)
        grown.update(from: bytes, count: used)
        bytes.deallocate()
        bytes = grown
        capacity = bigger
    }
}
