/// Why the send policy held a push back: the delivery is `suppressed` with this reason and no
/// APNs request went out. The raw values are the SQL `CHECK` lists of `deliveries.suppressed_reason`
/// and `messages.suppressed_reason` (migration 0021).
///
/// - `unsubscribed`: the subscriber turned everything off (`all: false`).
/// - `categoryDisabled`: the subscriber turned the message's category off, or never chose and the
///   category is off by default.
/// - `frequencyCapped`: a frequency cap of the tenant had no slot left for the subscriber.
/// - `quietHours`: a workflow send with `policy: "drop"` fell in the tenant's quiet hours.
///
/// A critical category ignores preferences and caps: none of the first three applies to it.
public enum SuppressionReason: String, Sendable, Hashable, CaseIterable {
    case unsubscribed
    case categoryDisabled = "category_disabled"
    case frequencyCapped = "frequency_capped"
    case quietHours = "quiet_hours"

    /// What a person reads beside the delivery.
    public var explanation: String {
        switch self {
        case .unsubscribed: "the subscriber turned off every notification"
        case .categoryDisabled: "the subscriber turned off this category (or it is off by default)"
        case .frequencyCapped: "a frequency cap had no slot left for the subscriber"
        case .quietHours: "the send fell in quiet hours and its policy drops it"
        }
    }
}
