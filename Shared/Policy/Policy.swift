import BuzzKitPostgres

/// The send policy's one owner: every statement on `categories`, `policy_settings`,
/// `frequency_caps`, `subscriber_preferences`, `subscriber_category_preferences`,
/// `subscriber_preference_changes` and `frequency_cap_counters` (migrations 0023, 0029) lives in this
/// module, whichever process runs it. docs/policy.md has the whole picture.
///
/// | facet | who calls it | what it does |
/// |---|---|---|
/// | `putCategory`, `category`, `categories`, `deleteCategory` | the gateway (`/v1/categories`) | the tenant's categories; a category in use (an enabled workflow's send, the default category, a cap) is not deleted (409 `category_in_use`) |
/// | `missingCategories` | the gateway (a message, a workflow's save or enable) | which named categories do not exist (422), optionally locking the others until the caller's transaction ends |
/// | `settings`, `replaceSettings` | the gateway (`/v1/settings`) | the default category and the frequency caps |
/// | `preferences`, `changePreferences`, `preferenceHistory` | the gateway (`/v1/subscribers/{id}/preferences`) | a subscriber's choices, each change kept with its time and source |
/// | `decide` | apns-sender (each chunk), the workflow service (each send step) | whether each (message, subscriber) goes out or why not; one statement per chunk, caps counted exactly under concurrency |
/// | `uncategorizedSQL`, `uncategorized` | apns-sender (in each chunk's claim), the workflow service (each claim of due runs) | what `decide` answers for pushes naming no category when only the global opt-out can apply to them (`UncategorizedPolicy`): `decide` then asks no statement for them |
/// | `evaluate` | the gateway (a workflow's dry run) | the same decision, rolled back: counts nothing |
/// | `lockCounters` | the workflow service (a claim, an event group) | takes the cap locks (advisory) of the subscribers it may decide for, in order, before its first `decide` |
public struct Policy: Sendable {
    public let postgres: PostgresClient

    public init(postgres: PostgresClient) {
        self.postgres = postgres
    }
}
