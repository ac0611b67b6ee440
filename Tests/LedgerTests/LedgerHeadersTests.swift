import BuzzKitCore
import BuzzKitWire
import Testing

@testable import BuzzKitLedger

/// The ledger's `headers` template, written straight to bytes, is valid JSON with every header
/// intact, however its value is spelled, but the apns-id, written as the placeholder the
/// `delivery_attempts` view fills in; and the reused writer never leaks one call into the next.
@Suite("LedgerHeaders")
struct LedgerHeadersTests {
    @Test func everyHeaderSurvivesAsJSON() throws {
        var ledger = LedgerHeaders()
        let tricky: HTTPHeaders = [
            "apns-topic": "com.example.app",
            "apns-collapse-id": "quote \" backslash \\ tab \t newline \n bell \u{07} é 🚀",
            "authorization": "bearer eyJ.abc.def"
        ]
        let first = try JSONValue.parse(ledger.template(tricky))
        #expect(
            first == .object(Dictionary(uniqueKeysWithValues: tricky.map { ($0.name, JSONValue.string($0.value)) })))
        let second = try JSONValue.parse(ledger.template(["apns-priority": "10", "apns-id": "0AF1-stays-out"]))
        #expect(second == .object(["apns-priority": .string("10"), "apns-id": .string("{apns-id}")]))
        #expect(try JSONValue.parse(ledger.template(HTTPHeaders())) == .object([:]))
    }
}
