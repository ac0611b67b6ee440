import BuzzKitContracts
import Foundation
import Testing

@testable import LiveActivityApp

/// One deciding statement cannot decide two sends to the same rows in order, so a batch is split
/// into rounds: requests to one activity, one subscriber's push-to-start tokens of one type, or
/// with one message id go into successive rounds, in the order they were made.
@Suite("Live Activity rounds")
struct LiveActivityRoundsTests {
    static let tenant = UUID(), other = UUID()

    static func update(_ activity: String, tenant: UUID = tenant, message: UUID = UUID()) -> LiveActivityEntry {
        entry(.update, tenant: tenant, message: message, activity: activity)
    }

    static func entry(
        _ event: LiveActivitySendRequest.Event, tenant: UUID = tenant, message: UUID = UUID(), to: String = "sub",
        activity: String? = nil, type: String? = nil
    ) -> LiveActivityEntry {
        LiveActivityEntry(
            tenantId: tenant, messageId: message, replyKey: "k",
            request: LiveActivitySendRequest(
                to: to, event: event, activityId: activity, attributesType: type, contentState: [:], timestamp: 1))
    }

    @Test func requestsToDifferentRowsShareOneRound() {
        let entries = [Self.update("a"), Self.update("b"), Self.update("a", tenant: Self.other)]
        #expect(LiveActivityRounds.split(entries) == [[0, 1, 2]])
    }

    @Test func requestsToOneActivityGoInSuccessiveRoundsInTheirOrder() {
        let entries = [
            Self.update("a"), Self.update("b"), Self.entry(.end, activity: "a"), Self.update("c"), Self.update("a")
        ]
        #expect(LiveActivityRounds.split(entries) == [[0, 1, 3], [2], [4]])
    }

    @Test func oneSubscribersStartsOfOneTypeAndOneMessageIdAreApart() {
        let message = UUID()
        let entries = [
            Self.entry(.start, to: "x", type: "Match"), Self.entry(.start, to: "x", type: "Race"),
            Self.entry(.start, to: "x", type: "Match"), Self.update("a", message: message),
            Self.update("b", message: message)
        ]
        #expect(LiveActivityRounds.split(entries) == [[0, 1, 3], [2, 4]])
    }
}
