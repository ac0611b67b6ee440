#if canImport(ActivityKit) && os(iOS)
    import ActivityKit
    import Foundation

    /// The activities of one `ActivityAttributes` type as `ActivityUpdate`s: those that exist now and
    /// every one started later (by the app, `start`, or the server), each with its push token
    /// rotations and state changes, plus the type's push-to-start token on iOS 17.2 and later.
    @available(iOS 16.2, *)
    struct ActivityKitProvider<Attributes: ActivityAttributes>: ActivityProvider {
        /// Only this activity (what `monitor(_:)` watches); nil: every activity of the type.
        let single: Activity<Attributes>?

        var attributesType: String { String(describing: Attributes.self) }

        func updates() -> AsyncStream<ActivityUpdate> {
            let type = attributesType
            let single = UncheckedBox(self.single)
            return AsyncStream { continuation in
                @Sendable func watch(_ boxed: UncheckedBox<Activity<Attributes>>) -> [Task<Void, Never>] {
                    let activity = boxed.value
                    let id = activity.id
                    continuation.yield(.activity(id: id, attributesType: type))
                    if let token = activity.pushToken {
                        continuation.yield(.pushToken(id: id, attributesType: type, token: token))
                    }
                    let tokens = Task {
                        for await token in boxed.value.pushTokenUpdates {
                            continuation.yield(.pushToken(id: id, attributesType: type, token: token))
                        }
                    }
                    let states = Task {
                        for await state in boxed.value.activityStateUpdates {
                            switch state {
                            case .active: continuation.yield(.state(id: id, attributesType: type, .active))
                            case .stale: continuation.yield(.state(id: id, attributesType: type, .stale))
                            case .ended: continuation.yield(.state(id: id, attributesType: type, .ended))
                            case .dismissed: continuation.yield(.state(id: id, attributesType: type, .dismissed))
                            @unknown default: break
                            }
                        }
                    }
                    return [tokens, states]
                }
                let main = Task {
                    if let activity = single.value {
                        let tasks = watch(UncheckedBox(activity))
                        for task in tasks { await task.value }
                        continuation.finish()
                        return
                    }
                    for activity in Activity<Attributes>.activities { _ = watch(UncheckedBox(activity)) }
                    if #available(iOS 17.2, *) {
                        Task {
                            if let token = Activity<Attributes>.pushToStartToken {
                                continuation.yield(.pushToStartToken(attributesType: type, token: token))
                            }
                            for await token in Activity<Attributes>.pushToStartTokenUpdates {
                                continuation.yield(.pushToStartToken(attributesType: type, token: token))
                            }
                        }
                    }
                    for await activity in Activity<Attributes>.activityUpdates { _ = watch(UncheckedBox(activity)) }
                }
                continuation.onTermination = { _ in main.cancel() }
            }
        }
    }

    @available(iOS 16.2, *)
    extension Activities {
        /// Keeps every activity of `type` registered (see `ActivityKitProvider`). Call once per
        /// attributes type at every launch.
        public func observe<Attributes: ActivityAttributes>(_ type: Attributes.Type) {
            observe(ActivityKitProvider<Attributes>(single: nil))
        }

        /// Watches one activity: its token, rotations and state.
        public func monitor<Attributes: ActivityAttributes>(_ activity: Activity<Attributes>) {
            observe(ActivityKitProvider<Attributes>(single: activity))
        }

        /// Requests an activity with `pushType: .token` and monitors it. Throws what
        /// `Activity.request` throws.
        public func start<Attributes: ActivityAttributes>(
            _ attributes: Attributes, state: Attributes.ContentState,
            staleDate: Date? = nil, relevanceScore: Double = 0
        ) throws -> Activity<Attributes> {
            let activity = try Activity.request(
                attributes: attributes,
                content: ActivityContent(state: state, staleDate: staleDate, relevanceScore: relevanceScore),
                pushType: .token)
            monitor(activity)
            return activity
        }

        /// Ends the activity on the device, on the server and as `$activity.ended`.
        public func end<Attributes: ActivityAttributes>(
            _ activity: Activity<Attributes>,
            dismissalPolicy: ActivityUIDismissalPolicy = .default
        ) async {
            await activity.end(nil, dismissalPolicy: dismissalPolicy)
            await handle(.activity(id: activity.id, attributesType: String(describing: Attributes.self)))
            await end(id: activity.id)
        }
    }
#endif
