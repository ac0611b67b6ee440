import BuzzKitWire
import Foundation

extension UUID {
    /// A version 8 UUID (RFC 9562: name-based, SHA-256) of `name`: its first 16 digest bytes with the
    /// version and variant bits set. The same name always gives the same id, in any process: a
    /// delivery's id from its message and device (`bk_delivery_id` in SQL computes the same), a
    /// workflow step's message id from its run and step.
    public static func nameBased(_ name: String) -> UUID { nameBased(utf8: Array(name.utf8)) }

    /// `nameBased` of a name given as its UTF-8 bytes (a hot caller writes the name straight into
    /// one buffer instead of interpolating a string).
    public static func nameBased(utf8 name: [UInt8]) -> UUID {
        let d = Digest.sha256(name)
        return UUID(
            uuid: (
                d[0], d[1], d[2], d[3], d[4], d[5],
                (d[6] & 0x0F) | 0x80,  // version 8
                d[7],
                (d[8] & 0x3F) | 0x80,  // RFC 9562 variant
                d[9], d[10], d[11], d[12], d[13], d[14], d[15]
            ))
    }
}
