import Foundation
import Synchronization

/// Which tenants lately had an endpoint wanting the deliveries' webhook events (`delivery.sent`,
/// `delivery.failed`), as a replica's records found them: only which record statement to try
/// first (`Ledger.record`). A fan-out chunk of a tenant noted here in the last `recheck` goes
/// to the full statement at once, not to the quiet one that would find the endpoint and write
/// nothing; any other is tried quietly, and the statement itself looks for the endpoint in its
/// snapshot. So a wrong guess costs one statement, never an event: an endpoint added since is
/// found by the quiet statement, one removed is found absent by the full statement's gates.
final class DeliveryEventEndpoints: Sendable {
    /// How long a tenant noted stays noted: after it, its next chunk is tried quietly again (one
    /// statement more per tenant with endpoints and replica, once a minute).
    static let recheck = Duration.seconds(60)

    private let noted = Mutex<[UUID: ContinuousClock.Instant]>([:])

    /// Whether one of `tenants` was noted within `recheck`.
    func lately(_ tenants: [UUID]) -> Bool {
        let now = ContinuousClock.now
        return noted.withLock { noted in
            tenants.contains { noted[$0].map { now - $0 < Self.recheck } ?? false }
        }
    }

    /// `tenants` (one of them, at least) had such an endpoint just now.
    func note(_ tenants: [UUID]) {
        let now = ContinuousClock.now
        noted.withLock { noted in
            if noted.count > 10_000 { noted.removeAll(keepingCapacity: true) }
            for tenant in tenants { noted[tenant] = now }
        }
    }
}
