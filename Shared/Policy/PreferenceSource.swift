/// Who changed a subscriber's preferences, as `subscriber_preference_changes.source` stores it:
/// the tenant's backend (`api`), the app through the SDK (`sdk`, every client-key change) or a
/// person on the dashboard (`dashboard`). The raw values are that column's `CHECK` list.
public enum PreferenceSource: String, Sendable, Hashable, CaseIterable {
    case api
    case sdk
    case dashboard
}
