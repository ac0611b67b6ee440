import BuzzKitHTTPClient

/// Writes an attempt's request headers as the ledger's `headers` JSON object (names as sent,
/// a repeated name keeps its last value, as `jsonb` does), straight into bytes.
///
/// Same document as `APNsResponse.requestHeadersJSON.jsonString` without building a dictionary
/// and a `JSONValue` per attempt. The buffer is reused between calls.
struct LedgerHeaders {
    private var buffer: [UInt8] = []

    mutating func json(_ headers: HTTPHeaders) -> [UInt8] {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(UInt8(ascii: "{"))
        var first = true
        for field in headers {
            if !first { buffer.append(UInt8(ascii: ",")) }
            first = false
            Self.appendString(field.name, to: &buffer)
            buffer.append(UInt8(ascii: ":"))
            Self.appendString(field.value, to: &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
        return buffer
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// A JSON string: `"` and `\` escaped, control characters as `\u00XX`.
    static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var start = 0
            for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                if byte < 0x20 {
                    out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                            hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
                } else {
                    out.append(UInt8(ascii: "\\"))
                    out.append(byte)
                }
                start = index + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<bytes.count]))
        }
        out.append(UInt8(ascii: "\""))
    }
}
