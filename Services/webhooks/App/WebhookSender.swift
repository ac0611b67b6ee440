import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPClient
import BuzzKitWebhooks
import Foundation

/// Makes one attempt of a claimed message: checks where its URL leads now (the address rules,
/// DNS included), signs the body with the endpoint's secret (and the previous one during a
/// rotation's overlap), POSTs it to exactly the addresses checked (no redirects, no proxy,
/// `timeout`), and says what came of it: delivered (2xx), retrying at a time (the schedule, or
/// later if `Retry-After` asks) or failed (the schedule is exhausted).
struct WebhookSender: Sendable {
    let http: HTTPClient
    let resolver: WebhookHostResolver
    let policy: WebhookAddressPolicy
    let sealer: AESGCM
    let schedule: WebhookRetrySchedule
    let timeout: Duration

    /// How much of an answer's body is kept (and recorded).
    static let responseLimit = 1024

    /// The attempt's outcomes: this attempt's, preceded by a lost one when the message's previous
    /// claim never recorded its answer.
    func send(_ message: ClaimedWebhookMessage) async -> [WebhookAttemptOutcome] {
        var outcomes: [WebhookAttemptOutcome] = []
        let attempt = message.attempts + 1
        if let lostWith = message.lostWith {
            outcomes.append(
                WebhookAttemptOutcome(
                    endpointId: message.endpointId, messageId: message.id, claim: message.claim,
                    eventType: message.eventType, kind: .lost, attempt: attempt, attemptedAt: Date(),
                    error:
                        "unknown: the answer was lost with replica \(lostWith), which stopped mid-send; sent again with the same webhook-id"
                ))
        }
        let started = Date()
        let result = await exchange(message)
        let clockTime = Date().timeIntervalSince(started)
        var outcome = WebhookAttemptOutcome(
            endpointId: message.endpointId, messageId: message.id, claim: message.claim, eventType: message.eventType,
            kind: .delivered, attempt: attempt, attemptedAt: started)
        var retryAfter: Duration?
        switch result {
        case .answered(let response):
            outcome.httpStatus = response.status
            outcome.latencyMs = Int((clockTime * 1000).rounded())
            outcome.response = Self.text(response.body)
            if !(200..<300).contains(response.status) {
                outcome.error = "HTTP \(response.status)"
                retryAfter = WebhookRetrySchedule.retryAfter(response.headers["retry-after"], now: Date())
            }
        case .refused(let problem):
            outcome.error = "refused: " + problem
        case .noAnswer(let error):
            outcome.latencyMs = Int((clockTime * 1000).rounded())
            outcome.error = error
        }
        if outcome.error != nil {
            if let delay = schedule.delay(after: attempt, retryAfter: retryAfter) {
                outcome.kind = .retrying
                outcome.nextAttemptAt = Date().addingTimeInterval(
                    Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            } else {
                outcome.kind = .failed
            }
        }
        outcomes.append(outcome)
        return outcomes
    }

    enum Exchange {
        case answered(HTTPClientResponse)
        /// Not sent: the URL or where it leads is refused now, or the secret cannot be opened.
        case refused(String)
        /// Sent (or tried), no answer: a timeout, a refused or broken connection.
        case noAnswer(String)
    }

    private func exchange(_ message: ClaimedWebhookMessage) async -> Exchange {
        let url: WebhookURL
        switch WebhookURL.parse(message.url, allowHTTP: policy.allowPrivate) {
        case .success(let parsed): url = parsed
        case .failure(let problem): return .refused("the URL " + problem.message)
        }
        let addresses: [IPAddress]
        switch await resolver.check(url, policy: policy) {
        case .success(let found): addresses = found
        case .failure(let problem): return .refused(problem.message)
        }
        var secrets: [WebhookSecret] = []
        do {
            secrets.append(try WebhookSecret.open(message.secretSealed, by: sealer, endpointId: message.endpointId))
            if let previous = message.previousSecretSealed {
                secrets.append(try WebhookSecret.open(previous, by: sealer, endpointId: message.endpointId))
            }
        } catch {
            return .refused("the endpoint's secret cannot be opened (was BUZZKIT_SECRET_KEY changed?)")
        }
        let body = Self.body(type: message.eventType, occurredAt: message.occurredAt, dataJSON: message.dataJSON)
        let id = message.id.uuidString.lowercased()
        let timestamp = Int64(Date().timeIntervalSince1970)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "User-Agent", value: "BuzzKit-Webhooks/1")
        headers.add(name: "webhook-id", value: id)
        headers.add(name: "webhook-timestamp", value: String(timestamp))
        headers.add(
            name: "webhook-signature",
            value: WebhookSignature.header(id: id, timestamp: timestamp, body: body, secrets: secrets))
        let request = HTTPClientRequest(
            method: .POST, url: url.text, headers: headers, body: body, timeout: timeout,
            resolve: url.pin(addresses), maxResponseBodyBytes: Self.responseLimit)
        do {
            return .answered(try await http.execute(request))
        } catch let error as HTTPClientError {
            return .noAnswer("\(error.code): \(error.message)")
        } catch {
            return .noAnswer("\(error)")
        }
    }

    /// `{"type":…,"timestamp":…,"data":…}`: the same bytes on every attempt (the stored jsonb text).
    static func body(type: String, occurredAt: Date, dataJSON: String) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(dataJSON.utf8.count + type.utf8.count + 64)
        body.append(contentsOf: #"{"type":""#.utf8)
        body.append(contentsOf: type.utf8)
        body.append(contentsOf: #"","timestamp":""#.utf8)
        body.append(contentsOf: WebhookTime.text(occurredAt).utf8)
        body.append(contentsOf: #"","data":"#.utf8)
        body.append(contentsOf: dataJSON.utf8)
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// The first 1 kB of an answer as text (invalid UTF-8 replaced, NUL dropped: Postgres text cannot hold it).
    static func text(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty else { return nil }
        return String(decoding: bytes.prefix(responseLimit).filter { $0 != 0 }, as: UTF8.self)
    }
}
