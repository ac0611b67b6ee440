import BuzzKitContracts
import Foundation

/// Splits a batch of requests into rounds that one deciding statement each can take: within a
/// round no activity (update, end), no subscriber's push-to-start tokens of one type (start) and
/// no message id appears twice, since one statement cannot decide two sends to the same rows in
/// order (both would see the rows as they were before it). A request goes into the round after
/// the last one holding any of its keys, so two requests to one activity are decided in the
/// order they were made (an `end` then an `update`: the update finds the activity ended).
///
/// ```swift
/// LiveActivityRounds.split([update(a), update(b), end(a), update(a)])  // [[0, 1], [2], [3]]
/// ```
enum LiveActivityRounds {
    static func split(_ entries: [LiveActivityEntry]) -> [[Int]] {
        var rounds: [[Int]] = []
        var lastRound: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            let keys = Self.keys(entry)
            let round = keys.compactMap { lastRound[$0] }.max().map { $0 + 1 } ?? 0
            if round == rounds.count { rounds.append([]) }
            rounds[round].append(index)
            for key in keys { lastRound[key] = round }
        }
        return rounds
    }

    /// The rows a request's decision locks or writes, by name.
    static func keys(_ entry: LiveActivityEntry) -> [String] {
        let request = entry.request
        let tenant = entry.tenantId.uuidString
        let rows: String
        switch request.event {
        case .update, .end:
            rows = "activity\u{0}" + tenant + "\u{0}" + (request.activityId ?? "")
        case .start:
            rows = "start\u{0}" + tenant + "\u{0}" + request.to + "\u{0}" + (request.attributesType ?? "")
        }
        return [rows, "message\u{0}" + entry.messageId.uuidString]
    }
}
