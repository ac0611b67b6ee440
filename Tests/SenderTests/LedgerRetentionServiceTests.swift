import BuzzKitCore
import BuzzKitCrypto
import BuzzKitRetention
import BuzzKitTestSupport
import Foundation
import Testing

@testable import APNsSenderApp

/// apns-sender's `ledger.retention` loop: its setting, what `/metrics` and `GET /v1/retention`
/// show after a pass (the ledger's weeks themselves: `LedgerRetentionTests`).
@Suite("ledger retention service", .requiresPostgres)
struct LedgerRetentionServiceTests {
    @Test func theServiceShowsTheSettingAndTheOldestDataKept() async throws {
        let schema = try await MigratedSchema.start("ledgerretsvc")
        try await withCleanup {
            let secret = Data(SecureRandom.bytes(32)).base64EncodedString()
            var configuration = try SenderConfiguration(environment: [
                "BUZZKIT_SECRET_KEY": secret, "BUZZKIT_LEDGER_RETENTION_DAYS": "45"
            ])
            #expect(configuration.ledgerRetentionDays == 45)
            #expect(throws: ConfigurationError.self) {
                try SenderConfiguration(environment: [
                    "BUZZKIT_SECRET_KEY": secret, "BUZZKIT_LEDGER_RETENTION_DAYS": "6"
                ])
            }
            configuration.ledgerRetentionDays = 12
            let registry = MetricsRegistry()
            let service = LedgerRetentionService(
                postgres: schema.postgres, configuration: configuration, logger: .silent(), metrics: registry)
            let pass = try await service.pass()
            #expect(pass.ran && pass.kept.isEmpty && pass.dropped.isEmpty)
            let text = registry.render()
            for line in RetentionMetricsText.afterFirstPass(table: "messages", days: 12) {
                #expect(text.contains(line), "\(line)")
            }
            let status = try await RetentionStatus.all(on: schema.postgres)
            #expect(status.map(\.table) == ["messages"])
            #expect(status.first?.retention == .seconds(12 * 86_400) && status.first?.partitionsAhead == 4)
        } finally: {
            await schema.stop()
        }
    }
}
