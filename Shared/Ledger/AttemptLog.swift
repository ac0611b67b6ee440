import BuzzKitCore
import BuzzKitCrypto
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The one attempt format, for pushes and Live Activity sends alike: a delivery's attempts as the
/// compact JSON array `deliveries.attempts` holds (migrations 0016 and 0018), each one
///
/// | key | what | when |
/// |---|---|---|
/// | `n` | the attempt's number, from 1 | always |
/// | `t` | when it went out, milliseconds since 1970 (`APNsResponse.sentAt`) | always |
/// | `s` | the HTTP status, 0 when no answer came | always |
/// | `l` | the latency in milliseconds | always |
/// | `r` | APNs's reason | when it gave one |
/// | `e` | why no answer came (or why the answer was lost) | when there is one |
/// | `a` | the apns-id APNs answered with, null when none came | when it differs from the delivery's id |
/// | `p` | the request (`delivery_payloads.id`) | when it differs from the delivery's first |
///
/// The `delivery_attempts` view turns each into a row (payload, headers with the delivery's
/// apns-id, status, reason, apns-id, latency, error, `at`).
struct AttemptLog {
    let deliveryId: String
    var json = JSONWriter(capacity: 80)
    var count = 0
    var firstPayload: UUID?

    init(deliveryId: String) {
        self.deliveryId = deliveryId
        json.raw("[]")
    }

    /// Each attempt goes in before the closing bracket, so `bytes` is the writer's own array (no
    /// copy per delivery).
    mutating func append(
        payload: UUID, sentAt: Date, status: Int, reason: String?, apnsId: String?, latency: Int, error: String?
    ) {
        json.removeLast()
        if count > 0 { json.raw(",") }
        count += 1
        if firstPayload == nil { firstPayload = payload }
        json.raw("{\"n\":")
        json.int(count)
        json.raw(",\"t\":")
        json.int(Int((sentAt.timeIntervalSince1970 * 1000).rounded()))
        json.raw(",\"s\":")
        json.int(status)
        json.raw(",\"l\":")
        json.int(latency)
        if let reason {
            json.raw(",\"r\":")
            json.string(reason)
        }
        if let error {
            json.raw(",\"e\":")
            json.string(error)
        }
        if apnsId != deliveryId {
            json.raw(",\"a\":")
            if let apnsId { json.string(apnsId) } else { json.raw("null") }
        }
        if payload != firstPayload {
            json.raw(",\"p\":\"")
            json.rawBytes(payload.lowercasedText.utf8)
            json.raw("\"")
        }
        json.raw("}]")
    }

    var bytes: [UInt8] { json.bytes }
}

/// The distinct requests of a record (one per message, normally), for `delivery_payloads`: the
/// exact payload bytes and the request headers with the apns-id as `{apns-id}`. Name-based ids,
/// so the same request recorded by two chunks is one row.
struct RequestRows {
    var ids = PostgresArrayText(), messages = PostgresArrayText()
    var payloads = PostgresArrayText(), headerTexts = PostgresArrayText(capacity: 512)
    private var added = Set<UUID>()
    private var last: (message: UUID, payload: [UInt8], headers: [UInt8], sent: HTTPHeaders, id: UUID)?
    private var writer = LedgerHeaders()

    /// The id of this request, adding it to the rows the first time. Consecutive attempts of
    /// one message's request (a fan-out chunk) are recognised by comparing with the last one's
    /// headers as sent, field by field with the `apns-id` values skipped (the template's
    /// placeholder), so no template is written for them; otherwise the id is the digest of the
    /// request (no hashing of the bytes into a table).
    mutating func id(message: UUID, payload: [UInt8], headers: HTTPHeaders) -> UUID {
        if let last, last.message == message, last.payload == payload, Self.sameTemplate(headers, last.sent) {
            return last.id
        }
        let template = writer.template(headers)
        var name = Array("payload:\(message.lowercasedText):".utf8)
        name += Hex.string(Digest.sha256(payload + [0x0A] + template)).utf8
        let id = UUID.nameBased(String(decoding: name, as: UTF8.self))
        last = (message, payload, template, headers, id)
        if added.insert(id).inserted {
            ids.append(id)
            messages.append(message)
            payloads.append(utf8: payload)
            headerTexts.append(utf8: template)
        }
        return id
    }

    /// Whether two header lists give the same template (`LedgerHeaders`, which writes names and
    /// values escaped, one to one, and `{apns-id}` for the value of `apns-id`): the same names in
    /// the same order and the same values, except `apns-id`'s.
    static func sameTemplate(_ a: HTTPHeaders, _ b: HTTPHeaders) -> Bool {
        guard a.count == b.count else { return false }
        for (x, y) in zip(a.fields, b.fields) {
            guard x.name == y.name, x.name == "apns-id" || x.value == y.value else { return false }
        }
        return true
    }
}
