/// Where one delivery (one message to one device) is, as `deliveries.status` stores it and the
/// ledger routes answer it.
///
/// `queued` (made by the fan-out) → `sending` (claimed by a sender replica, which records who and
/// when) → `sent` (APNs accepted it) | `failed` (`error_code` says why, e.g. `apns_rejected`)
/// | `expired` (its message's `expiresAt` passed first) | `invalidToken` (APNs said the token is
/// gone; the device is deactivated). A delivery left `sending` by a replica that died stays
/// `sending` until another replica takes its chunk over and sends it again (same `apns-id` and
/// collapse id); older rows may still say `failed` / `sender_lost`. The raw values are the SQL
/// `CHECK` list of `deliveries.status` (migration 0004); `StatusCheckTests` holds the two equal.
public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable {
    case queued
    case sending
    case sent
    case failed
    case expired
    case invalidToken = "invalid_token"
}
