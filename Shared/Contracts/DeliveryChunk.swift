import BuzzKitRedis
import BuzzKitWire
import Foundation

/// A chunk of deliveries to send, on `bk:deliveries`: what one sender replica claims and sends in
/// one go. The chunk itself (its devices, who holds it) is a `delivery_chunks` row in Postgres; the
/// entry only names it, so a redelivered or duplicated entry finds the chunk claimed or gone and
/// sends nothing twice.
///
/// Fields: `v` (`2`), `tenant`, `chunk` (uuids). Version 1 entries named delivery ids; their
/// deliveries became chunk rows in migration 0016, put on the stream again by the orphan sweep, so
/// a reader acknowledges a version 1 entry without acting on it (`isSuperseded`).
public struct DeliveryChunk: Sendable, Hashable {
    /// Devices per chunk the fan-out writes by default.
    public static let defaultSize = 100

    public var tenantId: UUID
    public var chunkId: UUID

    public init(tenantId: UUID, chunkId: UUID) {
        self.tenantId = tenantId
        self.chunkId = chunkId
    }

    static let version = "2"

    public var fields: [(String, [UInt8])] {
        [
            ("v", Array(Self.version.utf8)), ("tenant", Array(tenantId.lowercasedText.utf8)),
            ("chunk", Array(chunkId.lowercasedText.utf8))
        ]
    }

    /// A version 1 entry (delivery ids), written before chunks were rows: nothing to do.
    public static func isSuperseded(_ entry: StreamEntry) -> Bool { entry.string("v") == "1" }

    public init(entry: StreamEntry) throws(StreamContractError) {
        guard entry.string("v") == Self.version else {
            throw StreamContractError("bk:deliveries", "unsupported entry version")
        }
        guard let tenant = entry.string("tenant").flatMap(UUID.init(uuidText:)),
            let chunk = entry.string("chunk").flatMap(UUID.init(uuidText:))
        else { throw StreamContractError("bk:deliveries", "missing or invalid tenant/chunk id") }
        self.init(tenantId: tenant, chunkId: chunk)
    }
}
