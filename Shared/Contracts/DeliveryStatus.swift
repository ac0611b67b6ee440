/// Where one delivery (one message to one device) is, as `deliveries.status` stores it and the
/// ledger routes answer it.
///
/// `queued` (made by the fan-out) → `sending` (claimed by a sender replica, which records who and
/// when) → `sent` (APNs accepted it) | `failed` (`error_code` says why, e.g. `apns_rejected`,
/// `sender_lost`) | `expired` (its message's `expiresAt` passed first) | `invalidToken` (APNs
/// said the token is gone; the device is deactivated). A delivery left `sending` by a replica
/// that died is never sent again: it ends `failed` / `sender_lost`. The raw values are the SQL
/// `CHECK` list of `deliveries.status` (migration 0004); `StatusCheckTests` holds the two equal.
public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable {
    case queued
    case sending
    case sent
    case failed
    case expired
    case invalidToken = "invalid_token"
}
