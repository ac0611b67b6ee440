import BuzzKitRetention
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// `GET /v1/retention` reads what the owners' retention passes recorded (migration 0026).
@Suite("Retention route", .requiresTestStack)
struct RetentionRoutesTests {
    @Test func theRetentionInForceAndTheOldestDataKeptAsThePassesRecordedThem() async throws {
        try await withGateway { h in
            let none = try await h.send("GET", "/v1/retention", key: h.tenantKey)
            #expect(none.status == 200 && none.data?["tables"] == [], "\(none.envelope)")
            let oldest = try #require(ISO8601DateFormatter().date(from: "2026-11-02T00:00:00Z"))
            try await h.postgres.withConnection { connection in
                try await RetentionStatus(
                    table: "workflow_runs", retention: .seconds(30 * 86_400), oldestKept: oldest, partitions: 7,
                    partitionsAhead: 4, partitionsKept: 1, droppedLastPass: 2
                ).record(on: connection)
                try await RetentionStatus(
                    table: "events", retention: .seconds(36 * 3600), oldestKept: nil, partitions: 0, partitionsAhead: 0
                ).record(on: connection)
            }
            let listed = try await h.send("GET", "/v1/retention", key: h.tenantKey)
            let tables = try #require(listed.data?["tables"]?.arrayValue, "\(listed.envelope)")
            #expect(tables.map { $0["table"]?.stringValue } == ["events", "workflow_runs"])
            #expect(tables[0]["retentionSeconds"] == 129_600 && tables[0]["retentionDays"]?.doubleValue == 1.5)
            #expect(tables[0]["oldestKept"] == .null)
            let runs = tables[1]
            #expect(runs["retentionDays"]?.doubleValue == 30 && runs["oldestKept"] == "2026-11-02T00:00:00.000Z")
            #expect(runs["partitions"] == 7 && runs["partitionsAhead"] == 4 && runs["partitionsKept"] == 1)
            #expect(runs["droppedLastPass"] == 2 && runs["checkedAt"]?.stringValue != nil)
            // Another pass replaces the row.
            try await h.postgres.withConnection { connection in
                try await RetentionStatus(
                    table: "workflow_runs", retention: .seconds(7 * 86_400), oldestKept: oldest, partitions: 5,
                    partitionsAhead: 4
                ).record(on: connection)
            }
            let again = try await h.send("GET", "/v1/retention", key: h.tenantKey)
            let replaced = try #require(again.data?["tables"]?.arrayValue)
            #expect(replaced.count == 2)
            #expect(replaced[1]["retentionDays"]?.doubleValue == 7 && replaced[1]["droppedLastPass"] == 0)
        }
    }
}
