import BuzzKitContracts
import BuzzKitWire
import Foundation
import Testing

@testable import APNsSenderApp

/// How a stored message becomes the request every device gets, by `messages.kind`: a push as
/// before; a workflow's `local_plan` / `local_cancel` as a silent push (aps with only
/// content-available, background, priority 5, the bundle id as topic) carrying the stored plan
/// or the run id; a Live Activity message is not apns-sender's to send.
@Suite("PreparedMessage by kind")
struct PreparedMessageKindTests {
    let id = UUID(uuidString: "6f1c1d1e-0000-4000-8000-000000000001")!
    let created = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aLocalPlanIsTheSilentPushOfTheStoredPlan() throws {
        let plan = LocalPlan(
            id: "run-1:nudge", fireAt: .init(year: 2027, month: 1, day: 11, hour: 7, minute: 0), title: "Leg day",
            body: "Go", data: ["coach": "Maya"], deepLink: "gym://legs", cancelOn: ["workout.completed"],
            messageId: id.lowercasedText)
        let prepared = try PreparedMessageCache.prepare(
            id: id, kind: .localPlan, contentJSON: ["local": plan.jsonValue], createdAt: created,
            bundleId: "com.example.app")
        #expect(prepared.kind == .localPlan && prepared.expiresAt == nil)
        #expect(prepared.template.payload == PushPayload.local(plan, messageId: id.lowercasedText).encode())
        let headers = prepared.template.headers(authorization: nil)
        #expect(headers["apns-push-type"] == "background")
        #expect(headers["apns-priority"] == "5")
        #expect(headers["apns-topic"] == "com.example.app")
        #expect(headers["apns-expiration"] == nil)
        let payload = try JSONValue.parse(prepared.template.payload)
        #expect(payload["aps"] == ["content-available": 1])
        #expect(payload["bk"]?["local"] == plan.jsonValue)
        #expect(!prepared.isExpired(now: .distantFuture))
    }

    @Test func aLocalCancelCarriesTheRunId() throws {
        let prepared = try PreparedMessageCache.prepare(
            id: id, kind: .localCancel, contentJSON: ["cancel": ["runId": "run-1"]], createdAt: created,
            bundleId: "com.example.app")
        let expected = #"{"aps":{"content-available":1},"bk":{"messageId":"ID","cancel":{"runId":"run-1"}}}"#
        #expect(
            String(decoding: prepared.template.payload, as: UTF8.self)
                == expected.replacingOccurrences(of: "ID", with: id.lowercasedText))
        #expect(prepared.template.pushType == .background && prepared.template.priority == 5)
    }

    @Test func aPushIsBuiltFromItsContentAsBefore() throws {
        let expires = created.addingTimeInterval(60)
        let prepared = try PreparedMessageCache.prepare(
            id: id, kind: .push, contentJSON: ["title": "Hi", "expiresAt": .string(EventTimestamp.format(expires))],
            createdAt: created, bundleId: "com.example.app")
        #expect(prepared.kind == .push && prepared.template.pushType == .alert)
        #expect(prepared.isExpired(now: expires.addingTimeInterval(1)))
    }

    /// A push whose sender decided the policy (a workflow's send step) is not decided again: every
    /// device gets the stored verdict; a silent workflow push never carries one.
    @Test func aDecidedPushIsNotGovernedByThePolicyAgain() throws {
        let undecided = try PreparedMessageCache.prepare(
            id: id, kind: "push", contentJSON: ["title": "Hi"], createdAt: created, bundleId: "b")
        #expect(undecided.governedByPolicy && undecided.decided == nil)
        let through = try PreparedMessageCache.prepare(
            id: id, kind: "push", contentJSON: ["title": "Hi"], createdAt: created, bundleId: "b", decided: .some(nil))
        #expect(!through.governedByPolicy && through.decided == .some(nil))
        let held = try PreparedMessageCache.prepare(
            id: id, kind: "push", contentJSON: ["title": "Hi"], createdAt: created, bundleId: "b",
            decided: .some(.quietHours))
        #expect(!held.governedByPolicy && held.decided == .some(.quietHours))
        let plan = try PreparedMessageCache.prepare(
            id: id, kind: "local_cancel", contentJSON: ["cancel": ["runId": "r"]], createdAt: created, bundleId: "b",
            decided: .some(.quietHours))
        #expect(plan.decided == nil && !plan.governedByPolicy)
    }

    @Test func aKindThisBuildDoesNotKnowIsUnsendable() {
        #expect(throws: UnsendableMessage.self) {
            try PreparedMessageCache.prepare(
                id: id, kind: "carrier_pigeon", contentJSON: ["title": "Hi"], createdAt: created,
                bundleId: "com.example.app")
        }
    }

    @Test(arguments: [
        (MessageKind.localPlan, ["local": ["id": "x"]] as JSONValue),
        (MessageKind.localCancel, ["cancel": [:]] as JSONValue),
        (MessageKind.liveActivity, ["liveActivity": ["event": "update"]] as JSONValue)
    ])
    func unreadableOrNotOursIsUnsendable(kind: MessageKind, content: JSONValue) {
        #expect(throws: UnsendableMessage.self) {
            try PreparedMessageCache.prepare(
                id: id, kind: kind, contentJSON: content, createdAt: created, bundleId: "com.example.app")
        }
    }
}
