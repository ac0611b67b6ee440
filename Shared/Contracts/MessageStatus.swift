/// Where a message is on its way, as `messages.status` stores it and `GET /v1/messages/{id}`
/// answers it.
///
/// `queued` (stored by the intake, on `bk:messages`) → `fanningOut` (apns-sender expanding the
/// audience into chunks of devices, page by page) → `fannedOut` (every delivery exists, recorded
/// or pending in a chunk) → `completed` (every delivery is decided: `completed_at` says when); or
/// `failed` (`error_code` says why, e.g. `apns_credentials_missing`). `completed` and `failed` are
/// final. A message completes in the statement that records its last pending chunk, or right
/// after (see `MessageCompletion` in BuzzKitLedger and docs/ledger.md). The raw values are the SQL
/// `CHECK` list of `messages.status` (migrations 0004 and 0018); `StatusCheckTests` holds the two
/// equal.
public enum MessageStatus: String, Sendable, Hashable, CaseIterable {
    case queued
    case fanningOut = "fanning_out"
    case fannedOut = "fanned_out"
    case completed
    case failed

    /// Nothing more happens to the message.
    public var isFinal: Bool { self == .completed || self == .failed }
}
