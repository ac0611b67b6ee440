/// The consumer groups of the push streams (`StreamName.messages`, `StreamName.deliveries`).
///
/// | stream | group | consumer | entry |
/// |---|---|---|---|
/// | `bk:messages` | `apns-fanout` | apns-sender | `MessageEntry` (one message to fan out) |
/// | `bk:messages:direct` | `apns-direct` | apns-sender | `MessageEntry` (one direct message; taken in batches) |
/// | `bk:deliveries` | `apns-sender` | apns-sender | `DeliveryChunk` (a `delivery_chunks` row to claim and send) |
extension ConsumerGroup {
    /// apns-sender's fan-out group on `bk:messages`.
    public static let fanout = "apns-fanout"
    /// apns-sender's group on the direct stream (`StreamName.direct`): many messages per batch.
    public static let direct = "apns-direct"
    /// apns-sender's sending group on `bk:deliveries` (every replica shares it).
    public static let sender = "apns-sender"
}
