import BuzzKitWire
import Foundation

extension UUID {
    /// A version 8 UUID (RFC 9562: name-based, SHA-256) of `name`: its first 16 digest bytes with the
    /// version and variant bits set. The same name always gives the same id, in any process: a
    /// delivery's id from its message and device (`bk_delivery_id` in SQL computes the same), a
    /// workflow step's message id from its run and step.
    public static func nameBased(_ name: String) -> UUID {
        var b = Array(Digest.sha256(Array(name.utf8)).prefix(16))
        b[6] = (b[6] & 0x0F) | 0x80  // version 8
        b[8] = (b[8] & 0x3F) | 0x80  // RFC 9562 variant
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }
}
