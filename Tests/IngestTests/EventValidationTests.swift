import BuzzKitContracts
import BuzzKitIntake
import BuzzKitRedis
import BuzzKitWire
import Foundation
import Testing

/// The batch rules, without I/O.
@Suite struct EventValidationTests {
    let now = Date()

    func reject(_ body: JSONValue) -> APIError? {
        do {
            _ = try EventIntake.validate(body, now: now)
            return nil
        } catch {
            return error
        }
    }

    @Test func aFullBatchOf100IsValid() throws {
        let batch = try EventIntake.validate(
            Bodies.batch(subscriber: "u1", Bodies.events(prefix: "e", count: 100)),
            now: now)
        #expect(batch.events.count == 100)
        #expect(batch.identity == .subscriber("u1"))
    }

    @Test func batchOf101IsRejectedWithItsOwnCode() throws {
        let error = try #require(reject(Bodies.batch(subscriber: "u1", Bodies.events(prefix: "e", count: 101))))
        #expect(error.code == .batchTooLarge)
        #expect(error.code.httpStatus == 422)
        #expect(error.details == ["limit": 100, "count": 101])
    }

    @Test func badNameWrongReservedFieldsAndLongNameEachNameTheirIndex() throws {
        let longName = String(repeating: "a", count: 129)
        let body = Bodies.batch(
            subscriber: "u1",
            [
                Bodies.event("ok-0"),
                Bodies.event("bad-1", ""),
                Bodies.event("ok-2"),
                Bodies.event("bad-3", "$notification.opened", data: ["action": "open", "color": "red"]),
                Bodies.event("bad-4", longName)
            ])
        let error = try #require(reject(body))
        #expect(error.code == .validationFailed)
        let details = try #require(error.details?.arrayValue)
        let indices = details.compactMap { $0["index"]?.intValue }
        #expect(Set(indices) == [1, 3, 4])
        #expect(details.contains { $0["index"] == 1 && $0["field"] == "name" })
        #expect(details.contains { $0["index"] == 3 && $0["field"] == "data.messageId" })
        #expect(details.contains { $0["index"] == 3 && $0["field"] == "data.color" })
        #expect(
            details.contains {
                $0["index"] == 4 && $0["field"] == "name" && ($0["message"]?.stringValue ?? "").contains("129 bytes")
            })
    }

    @Test(arguments: [
        (
            "$notification.opened",
            ["messageId": "m1", "action": "open", "input": "hi", "deepLink": "gym://x"] as JSONValue, true
        ),
        ("$notification.opened", ["messageId": "m1", "input": nil] as JSONValue, true),
        ("$notification.delivered", [:] as JSONValue, false),
        ("$notification.delivered", ["messageId": 12] as JSONValue, false),
        ("$app.opened", [:] as JSONValue, true),
        ("$app.opened", ["x": 1] as JSONValue, false),
        ("$session.ended", ["durationSec": 12.5] as JSONValue, true),
        ("$deeplink.opened", ["url": "gym://a", "via": "elsewhere"] as JSONValue, false),
        ("$deeplink.opened", ["url": "gym://a", "via": "system"] as JSONValue, true),
        ("$action.triggered", ["name": "show_offer", "handled": false] as JSONValue, true),
        ("$made.up", [:] as JSONValue, false),
        ("workout.completed", ["anything": ["nested": [1, 2]]] as JSONValue, true)
    ])
    func reservedEventRules(name: String, data: JSONValue, valid: Bool) {
        let error = reject(Bodies.batch(subscriber: "u1", [Bodies.event("e1", name, data: data)]))
        #expect(
            (error == nil) == valid, "\(name) \(data.jsonString): \(String(describing: error?.details?.jsonString))")
    }

    @Test func batchLevelProblems() throws {
        let both = try #require(reject(Bodies.batch(subscriber: "u1", anonymous: "a1", [Bodies.event("e1")])))
        #expect(both.code == .validationFailed)
        let neither = try #require(reject(Bodies.batch([Bodies.event("e1")])))
        #expect(neither.details?.arrayValue?.first?["field"] == "subscriberId")
        // An id repeated in a batch is one event (deduplicated by id, as across batches): the first.
        let repeated = try EventIntake.validate(
            Bodies.batch(subscriber: "u1", [Bodies.event("e1"), Bodies.event("e2"), Bodies.event("e1")]), now: now)
        #expect(repeated.events.map(\.id) == ["e1", "e2"])
        let badTimestamp: JSONValue = ["id": "e1", "name": "x", "timestamp": "yesterday"]
        #expect(
            reject(Bodies.batch(subscriber: "u1", [badTimestamp]))?.details?.arrayValue?.first?["field"] == "timestamp")
        let future: JSONValue = [
            "id": "e1", "name": "x", "timestamp": .string(EventTimestamp.format(now.addingTimeInterval(3 * 86_400)))
        ]
        #expect(reject(Bodies.batch(subscriber: "u1", [future]))?.details?.arrayValue?.first?["field"] == "timestamp")
    }

    @Test(arguments: [
        ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00.000Z"),
        ("2024-05-01T12:00:00.25Z", "2024-05-01T12:00:00.250Z"),
        ("2024-05-01T14:00:00.123456+02:00", "2024-05-01T12:00:00.123456Z"),
        ("2024-02-29T23:59:59.999-0100", "2024-03-01T00:59:59.999Z")
    ])
    func timestamps(input: String, normalized: String) throws {
        let micros = try #require(EventTimestamp.parseMicroseconds(input))
        #expect(EventTimestamp.format(microseconds: micros) == normalized)
    }

    @Test(arguments: [
        "2024-05-01", "2024-05-01T12:00:00", "2023-02-29T00:00:00Z", "2024-05-01T25:00:00Z", "2024-05-01T12:00:00.Z"
    ])
    func invalidTimestamps(input: String) {
        #expect(EventTimestamp.parseMicroseconds(input) == nil)
    }

    @Test func ingestEntryRoundTrips() throws {
        let batch = try EventIntake.validate(
            Bodies.batch(
                anonymous: "anon é",
                [
                    Bodies.event("e1", data: ["text": "tab\there \"quoted\" ✓", "n": 1.5]),
                    Bodies.event("e2", "$app.opened", data: [:])
                ]), now: now)
        let entry = IngestEntry(tenantId: UUID(), batchId: "b1", batch: batch, receivedAt: now)
        let decoded = try IngestEntry(
            entry: StreamEntry(id: .zero, fields: entry.fields.map { (name: $0.0, value: $0.1) }))
        #expect(decoded == entry)
        #expect(try JSONValue.parse(decoded.events[0].dataJSON) == .object(batch.events[0].data))
    }
}
