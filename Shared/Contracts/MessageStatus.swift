/// Where a message is on its way, as `messages.status` stores it and `GET /v1/messages/{id}`
/// answers it.
///
/// `queued` (stored by the intake, on `bk:messages`) → `fanningOut` (apns-sender expanding the
/// audience into deliveries, page by page) → `fannedOut` (every delivery exists); or `failed`
/// (`error_code` says why, e.g. `apns_credentials_missing`). The raw values are the SQL `CHECK`
/// list of `messages.status` (migration 0004); `StatusCheckTests` holds the two equal.
public enum MessageStatus: String, Sendable, Hashable, CaseIterable {
    case queued
    case fanningOut = "fanning_out"
    case fannedOut = "fanned_out"
    case failed
}
