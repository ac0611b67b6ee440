import BuzzKitWire
import Foundation

extension BuzzKit {
    /// Tracks a custom event. Returns at once; the event is written to the queue on a background
    /// task, in call order, under the identity current at the time of this call.
    ///
    /// A name that is empty, longer than 128 bytes of UTF-8 or starts with `$` is logged as an
    /// error and dropped, never sent. When the name is one of a scheduled local notification's
    /// `cancelOn` events, that pending notification is removed (offline too).
    public func track(_ name: String, data: [String: JSONValue]? = nil) {
        if let problem = customEventNameProblem(name) {
            logger.error("event dropped: invalid name", ["event.name": name, "reason": problem])
            return
        }
        enqueue(name, data ?? [:], at: platform.clock.now(), cancelCheck: true)
    }

    /// Queues a reserved (`$`) event the SDK emits itself. `timestamp` defaults to now.
    func emit(_ name: String, _ data: [String: JSONValue] = [:], at timestamp: Date? = nil) {
        if let reserved = ReservedEvent.named(name) {
            let problems = reserved.problems(in: data)
            if !problems.isEmpty {
                logger.error(
                    "reserved event dropped: invalid data",
                    ["event.name": name, "reason": problems.map(\.message).joined(separator: "; ")])
                return
            }
        } else {
            logger.error("reserved event dropped: unknown name", ["event.name": name])
            return
        }
        enqueue(name, data, at: timestamp ?? platform.clock.now(), cancelCheck: false)
    }

    private func enqueue(_ name: String, _ data: [String: JSONValue], at timestamp: Date, cancelCheck: Bool) {
        let identity = self.identity
        let event = TrackedEvent(id: Self.newIdentifier(), name: name, data: data, timestamp: timestamp)
        jobs.submit { [self] in
            do {
                try await store.insert(event, identity: identity)
            } catch {
                logger.error("cannot queue event", ["event.name": name, "error": String(describing: error)])
                return
            }
            if cancelCheck { await cancelLocalNotifications(triggeredBy: name) }
            scheduleFlush(after: configuration.flushDelayAfterTrack)
        }
    }

    private func cancelLocalNotifications(triggeredBy name: String) async {
        do {
            let ids = try await store.takeCancelled(by: name)
            guard !ids.isEmpty else { return }
            await platform.notifications.removePending(ids: ids)
            logger.info("local notifications cancelled by event", ["event.name": name, "count": String(ids.count)])
        } catch {
            logger.error("cannot read cancelOn names", ["error": String(describing: error)])
        }
    }
}
