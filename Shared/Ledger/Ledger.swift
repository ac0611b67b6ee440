import BuzzKitCore
import BuzzKitPostgres

/// The delivery ledger's one owner: every statement that writes `messages`, `deliveries`,
/// `delivery_chunks`, `delivery_payloads`, the attempts (`deliveries.attempts`; the legacy
/// `delivery_attempt_rows`), `live_activities` and `live_activity_start_tokens` lives in this
/// module, whichever process runs it. Services call it and never each other (docs/ledger.md has
/// the tables, the writers and what each stage leaves behind when a process dies there).
///
/// | facet | who calls it | writes |
/// |---|---|---|
/// | `insertMessages`, `insertWorkflowMessages` | the gateway's intake, the workflow service | `messages` (`queued`) |
/// | `beginFanOut`, `writePage`, `finishFanOut`, `failMessage` | apns-sender's fan-out | `messages` (status, position), `delivery_chunks` |
/// | `takeDirect` | apns-sender's direct consumers | `messages`, `delivery_chunks` (claimed) |
/// | `claim`, `takeOverStale`, `orphans` | apns-sender | `delivery_chunks` |
/// | `record`, `recordLostLiveActivities` | both senders | `deliveries` (once each, with outcome and attempts), `delivery_payloads`, `delivery_chunks` (deleted), `messages` (completed), `devices` / Live Activity tokens (invalidated) |
/// | `completeIfDone`, `completeStragglers`, `touchUnfinished` | apns-sender | `messages` |
/// | `decideLiveActivities` | liveactivity | `messages`, `delivery_chunks` (claimed), `live_activities`, `live_activity_start_tokens` |
/// | `LiveActivityRegistry` | the gateway (the SDK's registrations) | `live_activities`, `live_activity_start_tokens` |
/// | `erasePage`, `eraseLiveActivities` | the gateway's erasure of a subscriber | `deliveries`, `delivery_payloads`, `delivery_attempt_rows`, `messages` (anonymised in place), `live_activities`, `live_activity_start_tokens` (deleted) |
///
/// One mapping from an APNs result to an outcome (`DeliveryOutcome(device:result:)`), one attempt
/// format (`AttemptLog`), one place a message completes (`MessageCompletion`).
public struct Ledger: Sendable {
    public let postgres: PostgresClient
    let logger: Logger
    /// Which record statement a fan-out chunk tries first (`record`); shared by the copies of
    /// this value.
    let deliveryEventEndpoints = DeliveryEventEndpoints()

    public init(postgres: PostgresClient, logger: Logger) {
        self.postgres = postgres
        self.logger = logger
    }
}
