import BuzzKitMigrations
import BuzzKitTestSupport
import Foundation
import Testing

@testable import BuzzKitLedger

/// A delivery's id is name-based on (message, device token): the sender computes it in Swift
/// (`DeliveryID.make`, the apns-id it sends) and the API in SQL (`bk_delivery_id`, for devices of
/// chunks not recorded yet). Both must give the same id, or a pending delivery listed by the API
/// would not be the one the ledger records.
@Suite("delivery ids", .requiresPostgres)
struct DeliveryIDTests {
    @Test func swiftAndSQLAgree() async throws {
        let schema = TestEnvironment.uniqueName("ids")
        let postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 1)
        _ = try await Migrator(client: postgres, logger: .silent()).migrate()
        let cases: [(UUID, String)] = [
            (UUID(), String(repeating: "ab", count: 32)), (UUID(), "0"), (UUID(), String(repeating: "f", count: 200)),
            (UUID(uuidString: "00000000-0000-0000-0000-000000000000")!, "a1"), (UUID(), "tökén ✓")
        ]
        for (message, token) in cases {
            let sql = try await postgres.query("SELECT bk_delivery_id($1::uuid, $2)::text", [message, token])[0]
                .decode(String.self, at: 0)
            let swift = DeliveryID.make(message: message, token: token)
            #expect(sql == swift)
            let digits = Array(swift.replacingOccurrences(of: "-", with: ""))
            #expect(digits[12] == "8", "version 8")
            #expect("89ab".contains(digits[16]), "RFC 9562 variant")
        }
        #expect(DeliveryID.make(message: cases[0].0, token: "x") != DeliveryID.make(message: cases[1].0, token: "x"))
        try await postgres.execute("DROP SCHEMA \"\(schema)\" CASCADE")
        await postgres.shutdown()
    }
}
