import BuzzKitCrypto
import BuzzKitPostgres
import BuzzKitWebhooks
import BuzzKitWire
import Foundation
import Testing

/// The pure parts of webhooks: the address rules, URL reading, the retry schedule and Retry-After.
@Suite("webhook rules")
struct WebhookRulesTests {
    @Test(arguments: [
        ("8.8.8.8", "public"), ("93.184.216.34", "public"), ("127.0.0.1", "loopback"), ("127.8.9.1", "loopback"),
        ("10.0.0.1", "private"), ("172.16.0.1", "private"), ("172.31.255.255", "private"), ("172.32.0.1", "public"),
        ("192.168.1.1", "private"), ("100.64.0.1", "private"), ("100.128.0.1", "public"),
        ("169.254.1.1", "link-local"), ("169.254.169.254", "cloud metadata"), ("100.100.100.200", "cloud metadata"),
        ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"), ("255.255.255.255", "reserved"),
        ("192.0.2.1", "reserved"), ("::1", "loopback"), ("::", "unspecified"), ("fe80::1", "link-local"),
        ("fd00::1", "private"), ("fc00::1", "private"), ("fd00:ec2::254", "cloud metadata"), ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.0.0.1", "private"), ("64:ff9b::a9fe:a9fe", "cloud metadata"),
        ("2001:db8::1", "reserved"), ("2606:4700:4700::1111", "public"), ("::ffff:8.8.8.8", "public")
    ])
    func addressScopes(_ text: String, _ scope: String) throws {
        let address = try #require(IPAddress(text: text))
        #expect(address.scope.rawValue == scope, "\(text)")
    }

    @Test func thePolicyRefusesWhatItMust() throws {
        let strict = WebhookAddressPolicy(allowPrivate: false)
        let open = WebhookAddressPolicy(allowPrivate: true)
        let loopback = try #require(IPAddress(text: "127.0.0.1"))
        let metadata = try #require(IPAddress(text: "169.254.169.254"))
        let public1 = try #require(IPAddress(text: "8.8.8.8"))
        #expect(strict.problem(host: "h", addresses: [public1]) == nil)
        #expect(strict.problem(host: "h", addresses: [public1, loopback]) != nil)  // any address refused: refused
        #expect(open.problem(host: "h", addresses: [loopback]) == nil)
        #expect(open.problem(host: "h", addresses: [metadata]) != nil)  // never, whatever the setting
        #expect(strict.problem(host: "h", addresses: []) != nil)
        #expect(open.problem(name: "metadata.google.internal") != nil)
        #expect(strict.problem(name: "localhost") != nil && open.problem(name: "localhost") == nil)
    }

    @Test(arguments: [
        ("https://example.com/hooks", true, true), ("https://example.com:8443/x?y=1", true, true),
        ("http://example.com/x", false, false), ("http://127.0.0.1:9000/x", true, true),
        ("ftp://example.com/x", true, false), ("https://user:pw@example.com/x", true, false),
        ("https://example.com/x#frag", true, false), ("https:///x", true, false),
        ("https://exa mple.com/", true, false),
        ("https://[::1]:8443/x", true, true), ("https://ex..ample.com/", true, false),
        ("HTTPS://Example.COM/x", false, true)
    ])
    func urls(_ text: String, _ allowHTTP: Bool, _ valid: Bool) {
        let parsed = WebhookURL.parse(text, allowHTTP: allowHTTP)
        if case .success = parsed { #expect(valid, "\(text)") } else { #expect(!valid, "\(text): \(parsed)") }
    }

    @Test func aURLPinsToWhatWasChecked() throws {
        let url = try WebhookURL.parse("https://hooks.example.com:8443/x", allowHTTP: false).get()
        let addresses = [try #require(IPAddress(text: "93.184.216.34")), try #require(IPAddress(text: "2606:2800::1"))]
        #expect(url.pin(addresses) == ["hooks.example.com:8443:93.184.216.34,[2606:2800::1]"])
        let literal = try WebhookURL.parse("https://[::1]/x", allowHTTP: true).get()
        #expect(literal.host == "::1" && literal.literal != nil && literal.pin([]) == [])
    }

    @Test func theStandardScheduleAndRetryAfter() {
        let schedule = WebhookRetrySchedule.standard
        #expect(schedule.attempts == 8)
        let waits = (1...8).map { schedule.delay(after: $0, retryAfter: nil)?.components.seconds }
        #expect(waits == [5, 300, 1800, 7200, 18000, 36000, 36000, nil])
        // Retry-After never makes the next attempt earlier than the schedule, only later (capped at a day).
        #expect(schedule.delay(after: 1, retryAfter: .seconds(60)) == .seconds(60))
        #expect(schedule.delay(after: 2, retryAfter: .seconds(1)) == .seconds(300))
        #expect(schedule.delay(after: 1, retryAfter: .seconds(900_000)) == .seconds(86400))
        #expect(WebhookRetrySchedule(text: "0s,500ms,1s")?.delays == [.zero, .milliseconds(500), .seconds(1)])
        #expect(WebhookRetrySchedule(text: "0s,soon") == nil)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(WebhookRetrySchedule.retryAfter("120", now: now) == .seconds(120))
        #expect(WebhookRetrySchedule.retryAfter("Tue, 14 Nov 2023 23:13:20 GMT", now: now) == .seconds(3600))
        #expect(WebhookRetrySchedule.retryAfter("soon", now: now) == nil)
        #expect(WebhookRetrySchedule.retryAfter(nil, now: now) == nil)
    }

    @Test func secretsReadBackAndSealPerEndpoint() throws {
        let secret = WebhookSecret.generate()
        #expect(secret.text.hasPrefix("whsec_") && WebhookSecret(text: secret.text) == secret)
        #expect(WebhookSecret(text: "whsec_" + Data(repeating: 1, count: 8).base64EncodedString()) == nil)
        let sealer = try AESGCMForTests.make()
        let a = UUID()
        let box = try secret.sealed(by: sealer, endpointId: a)
        #expect(try WebhookSecret.open(box, by: sealer, endpointId: a) == secret)
        #expect(throws: (any Error).self) { try WebhookSecret.open(box, by: sealer, endpointId: UUID()) }
    }

    @Test func everyTypeIsSubscribableButTheTest() {
        #expect(Set(WebhookEventType.subscribable) == Set(WebhookEventType.allCases).subtracting([.webhookTest]))
        #expect(WebhookEventType.allCases.filter(\.isBatched) == [.deliverySent])
    }

    /// A delivery batch's data, written from its stored columns: one item per delivery id, text
    /// escaped as JSON, a NULL or missing element as null, the batch's time as every `sentAt`.
    @Test func deliveryBatchesAreWrittenAsTheDocumentSays() throws {
        func column(_ text: String) throws -> PostgresFlatArray {
            try Array(text.utf8).withUnsafeBytes {
                try PostgresFlatArray.decode(from: PostgresCell(bytes: $0, typeOID: 0))
            }
        }
        let batch = WebhookDeliveryBatch(
            deliveryIds: try column("{6f1c0a4e-0000-4000-8000-000000000001,6f1c0a4e-0000-4000-8000-000000000002}"),
            messageIds: try column("{0194f1c0-0000-7000-8000-00000000000a,0194f1c0-0000-7000-8000-00000000000a}"),
            subscriberIds: try column(#"{"ana \"q\" \\ ü",NULL}"#),
            deviceTokens: try column("{aa01,bb02}"), environments: try column("{sandbox}"))
        let sentAt = Date(timeIntervalSince1970: 1_765_000_000.25)
        let data = try JSONValue.parse(batch.dataJSON(sentAt: sentAt))
        let items = try #require(data["deliveries"]?.arrayValue)
        #expect(items.count == 2)
        #expect(items[0]["deliveryId"] == "6f1c0a4e-0000-4000-8000-000000000001")
        #expect(items[0]["subscriberId"] == .string(#"ana "q" \ ü"#))
        #expect(items[0]["deviceToken"] == "aa01" && items[0]["environment"] == "sandbox")
        #expect(items[1]["subscriberId"] == .null && items[1]["environment"] == .null)
        #expect(items.allSatisfy { $0["sentAt"] == .string(WebhookTime.text(sentAt)) })
        #expect(batch.dataJSON(sentAt: sentAt) == batch.dataJSON(sentAt: sentAt))
    }
}

enum AESGCMForTests {
    static func make() throws -> AESGCM { try AESGCM(key: SecureRandom.bytes(32)) }
}
