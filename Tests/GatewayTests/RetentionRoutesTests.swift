import BuzzKitRetention
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// `GET /v1/retention` reads what the owners' retention passes recorded (migration 0026). The
/// gateway's own pass (idempotency records) records itself at start, at its own moment: the other
/// tables are checked without it, and it is checked apart.
@Suite("Retention route", .requiresTestStack)
struct RetentionRoutesTests {
    /// The listed tables other than the gateway's own.
    static func others(_ reply: Reply) -> [JSONValue] {
        (reply.data?["tables"]?.arrayValue ?? []).filter { $0["table"] != "idempotency_records" }
    }

    @Test func theRetentionInForceAndTheOldestDataKeptAsThePassesRecordedThem() async throws {
        try await withGateway { h in
            let none = try await h.send("GET", "/v1/retention", key: h.tenantKey)
            #expect(none.status == 200 && Self.others(none).isEmpty, "\(none.envelope)")
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
            let tables = Self.others(listed)
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
            let replaced = Self.others(again)
            #expect(replaced.count == 2)
            #expect(replaced[1]["retentionDays"]?.doubleValue == 7 && replaced[1]["droppedLastPass"] == 0)
            // The gateway's own: idempotency records, kept 24 hours, a week of days made ahead.
            var own: JSONValue?
            for _ in 0..<100 where own == nil {
                own = try await h.send("GET", "/v1/retention", key: h.tenantKey).data?["tables"]?.arrayValue?
                    .first { $0["table"] == "idempotency_records" }
                if own == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(own?["retentionSeconds"] == 86_400 && (own?["partitionsAhead"]?.intValue ?? 0) >= 7)
        }
    }
}
