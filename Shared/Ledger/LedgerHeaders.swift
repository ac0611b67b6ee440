import BuzzKitCore
import BuzzKitWire

/// Writes an attempt's request headers as a request template for `delivery_payloads.headers`: a
/// JSON object (names as sent, in order) whose `apns-id` value is the placeholder `{apns-id}` (the
/// `delivery_attempts` view puts each delivery's own back), straight into bytes. The writer's
/// storage is reused between calls.
struct LedgerHeaders {
    private var writer = JSONWriter(capacity: 512)

    mutating func template(_ headers: HTTPHeaders) -> [UInt8] {
        writer.removeAll()
        writer.raw("{")
        var first = true
        for field in headers {
            if !first { writer.raw(",") }
            first = false
            writer.string(field.name)
            writer.raw(":")
            writer.string(field.name == "apns-id" ? "{apns-id}" : field.value)
        }
        writer.raw("}")
        return writer.bytes
    }
}
