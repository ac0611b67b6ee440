import BuzzKit
import Foundation
import Synchronization

/// A clock that moves only when a test says so. `advance(by:)` runs due work in deadline order
/// and awaits each, so when it returns everything due has finished (flushes included).
final class ManualClock: BuzzKitClock {
    private enum Item: Sendable {
        case work(@Sendable () async -> Void)
        case wake(CheckedContinuation<Void, Never>)
    }

    private struct Entry: Sendable {
        var deadline: Date
        var sequence: Int
        var item: Item
        var cancelled = false
    }

    private struct State: Sendable {
        var now: Date
        var entries: [Int: Entry] = [:]
        var next = 0
    }

    private let state: Mutex<State>

    init(start: Date = Date(timeIntervalSince1970: 1_780_000_000)) {
        state = Mutex(State(now: start))
    }

    func now() -> Date { state.withLock { $0.now } }

    func sleep(seconds: TimeInterval) async {
        await withCheckedContinuation { continuation in
            state.withLock { s in
                s.next += 1
                s.entries[s.next] = Entry(
                    deadline: s.now.addingTimeInterval(seconds), sequence: s.next, item: .wake(continuation))
            }
        }
    }

    @discardableResult
    func schedule(after seconds: TimeInterval, _ work: @escaping @Sendable () async -> Void) -> ScheduledWork {
        let id = state.withLock { s -> Int in
            s.next += 1
            s.entries[s.next] = Entry(deadline: s.now.addingTimeInterval(seconds), sequence: s.next, item: .work(work))
            return s.next
        }
        return ScheduledWork { [self] in _ = self.state.withLock { $0.entries.removeValue(forKey: id) } }
    }

    /// Moves time forward, running everything that falls due on the way.
    func advance(by seconds: TimeInterval) async {
        let target = now().addingTimeInterval(seconds)
        while true {
            let due = state.withLock { s -> Entry? in
                guard
                    let entry = s.entries.values.filter({ $0.deadline <= target })
                        .min(by: { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) })
                else { return nil }
                s.entries.removeValue(forKey: entry.sequence)
                s.now = max(s.now, entry.deadline)
                return entry
            }
            guard let due else { break }
            switch due.item {
            case .work(let work): await work()
            case .wake(let continuation): continuation.resume()
            }
        }
        state.withLock { $0.now = max($0.now, target) }
    }

    /// Scheduled work and sleepers not yet due.
    var pendingCount: Int { state.withLock { $0.entries.count } }
}
