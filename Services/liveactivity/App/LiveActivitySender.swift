import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitLedger
import BuzzKitPush
import Foundation

/// Sends the pushes of a batch of decided Live Activity requests through the APNs client pool it
/// shares with nothing else in the process (`Shared/Push`: one HTTP/2 client per team and
/// environment, cached JWTs, apns-sender's retry policy).
///
/// Every push of the batch that goes through one client goes out as one `sendWithRetries(batch:)`
/// (one submission to the HTTP/2 client and one suspension, not one per push); the clients of a
/// batch are driven at once. Each result becomes the token's outcome through the ledger's one
/// mapping (`DeliveryOutcome(device:result:)`, the same as pushes). Never throws: a push that
/// cannot go out (no bundle id for the topic, no client) is a `failed` outcome with its code,
/// like one APNs refused.
struct LiveActivitySender: Sendable {
    let clients: APNsClientPool
    let retryPolicy: RetryPolicy

    /// One decided request: its targets, and its tenant's credentials (looked up before
    /// deciding, so a failed lookup leaves nothing `sending`).
    struct Job: Sendable {
        var entry: LiveActivityEntry
        var targets: [LiveActivityTarget]
        var tenant: TenantAPNs
    }

    /// The pushes of a batch that go through one client: (job, target) positions and their requests.
    typealias Group = (client: APNsClient, credentials: APNsCredentials, items: [(Int, Int, APNsRequest)])

    /// One outcome per target of each job, in the jobs' and targets' order.
    func send(_ jobs: [Job]) async -> [[DeliveryOutcome]] {
        var outcomes: [[DeliveryOutcome?]] = jobs.map { Array(repeating: nil, count: $0.targets.count) }
        /// Pushes by client.
        var groups: [String: Group] = [:]
        for (j, job) in jobs.enumerated() {
            func fail(_ t: Int, _ reason: String, _ code: DeliveryErrorCode) {
                outcomes[j][t] = DeliveryOutcome(
                    device: job.targets[t].device, status: .failed, lastReason: reason, errorCode: code)
            }
            guard let credentials = job.tenant.credentials else {
                let problem = job.tenant.problem ?? (code: .apnsCredentialsMissing, message: "no APNs credentials")
                for t in job.targets.indices { fail(t, problem.message, problem.code) }
                continue
            }
            let push = Self.push(job.entry.request)
            for (t, target) in job.targets.enumerated() {
                guard let bundleId = target.bundleId ?? job.tenant.bundleId else {
                    fail(t, "no bundle id for the topic", .apnsCredentialsMissing)
                    continue
                }
                let key = credentials.teamId + "|" + target.environment.rawValue
                if groups[key] == nil {
                    do {
                        let client = try clients.client(team: credentials.teamId, environment: target.environment)
                        groups[key] = (client, credentials, [])
                    } catch {
                        fail(t, "\(error)", .apnsClientUnavailable)
                        continue
                    }
                }
                let request = push.request(
                    deviceToken: target.token, bundleId: bundleId, apnsId: target.device.deliveryId)
                groups[key]?.items.append((j, t, request))
            }
        }
        let policy = retryPolicy
        @Sendable func send(_ batch: Group) async -> [(Int, Int, APNsDeliveryResult)] {
            let results = await batch.client.sendWithRetries(
                batch: batch.items.map(\.2), credentials: batch.credentials, policy: policy)
            return zip(batch.items, results).map { item, result in (item.0, item.1, result) }
        }
        // One client (the usual case): sent from this task, without a child task to start and wait for.
        let sent: [(Int, Int, APNsDeliveryResult)]
        if groups.count == 1, let only = groups.first?.value {
            sent = await send(only)
        } else {
            sent = await withTaskGroup(of: [(Int, Int, APNsDeliveryResult)].self) { group in
                for (_, batch) in groups { group.addTask { await send(batch) } }
                var all: [(Int, Int, APNsDeliveryResult)] = []
                for await part in group { all += part }
                return all
            }
        }
        for (j, t, result) in sent {
            outcomes[j][t] = DeliveryOutcome(device: jobs[j].targets[t].device, result: result)
        }
        return outcomes.enumerated().map { j, row in
            row.enumerated().map { t, outcome in
                outcome
                    ?? DeliveryOutcome(
                        device: jobs[j].targets[t].device, status: .failed, lastReason: "not sent",
                        errorCode: .apnsUnreachable)
            }
        }
    }

    static func push(_ request: LiveActivitySendRequest) -> LiveActivityPush {
        let alert = request.alert.map {
            LiveActivityPush.Alert(
                title: $0["title"]?.stringValue, body: $0["body"]?.stringValue, sound: $0["sound"]?.stringValue)
        }
        return LiveActivityPush(
            event: LiveActivityPush.Event(rawValue: request.event.rawValue) ?? .update,
            timestamp: request.timestamp, contentState: request.contentState,
            staleDate: request.staleDate, dismissalDate: request.dismissalDate, alert: alert,
            attributesType: request.attributesType, attributes: request.attributes,
            priority: request.priority)
    }
}
