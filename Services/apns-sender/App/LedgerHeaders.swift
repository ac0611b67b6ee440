import BuzzKitCore
import BuzzKitHTTPClient
import BuzzKitWire

/// Writes an attempt's request headers as the ledger's `headers` JSON object (names as sent, in
/// order), straight into bytes.
///
/// Same members as `APNsResponse.requestHeadersJSON` without building a dictionary and a
/// `JSONValue` per attempt. The writer's storage is reused between calls.
struct LedgerHeaders {
    private var writer = JSONWriter(capacity: 512)

    mutating func json(_ headers: HTTPHeaders) -> [UInt8] {
        writer.removeAll()
        writer.raw("{")
        var first = true
        for field in headers {
            if !first { writer.raw(",") }
            first = false
            writer.string(field.name)
            writer.raw(":")
            writer.string(field.value)
        }
        writer.raw("}")
        return writer.bytes
    }
}
