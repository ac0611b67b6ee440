import BuzzKitWire
import Foundation

extension BuzzKit {
    /// Reacts to a lifecycle signal (the platform's `PlatformLifecycle` calls this; tests may too).
    ///
    /// Foreground starts a session (`$app.opened`) or, within `sessionResumeWindow` (30 s) of the
    /// last background, resumes it; later, the old session is closed first with `$session.ended`
    /// (`durationSec`, timestamped at the background moment). Background emits
    /// `$app.backgrounded` and flushes. Online flushes. Foreground also reads the notification
    /// permission (`$permission.changed` when it changed). With `automaticSessionTracking` off no
    /// session event is emitted, and background still flushes.
    ///
    /// While in the foreground a heartbeat records the moment every `sessionHeartbeatInterval`
    /// (10 s). A process killed in the foreground never reports a background, so on the next
    /// launch's first foreground that last recorded moment stands in for it: the old session is
    /// closed there (or resumed, within the window), then the new one starts.
    public func handle(_ signal: LifecycleSignal) async {
        let now = platform.clock.now()
        switch signal {
        case .foreground:
            await checkPermission()
            guard configuration.automaticSessionTracking else { return }
            await jobs.run { [self] in await enterForeground(at: now) }
        case .background:
            if configuration.automaticSessionTracking {
                stopHeartbeat()
                emit(ReservedEvent.appBackgrounded, at: now)
                await jobs.run { [self] in
                    try? await store.setValues([
                        StateKey.backgroundAt: String(now.timeIntervalSince1970),
                        StateKey.lastActiveAt: String(now.timeIntervalSince1970)
                    ])
                }
            }
            await flushEvents()
        case .online:
            await flushEvents()
        }
    }

    private func enterForeground(at now: Date) async {
        let firstInProcess = state.withLock { s -> Bool in
            defer { s.foregroundSeen = true }
            return !s.foregroundSeen
        }
        defer { startHeartbeat() }
        let start = (try? await store.value(StateKey.sessionStart)).flatMap(Double.init)
        var background = (try? await store.value(StateKey.backgroundAt)).flatMap(Double.init)
        if let start, background == nil {
            guard firstInProcess else { return }  // already in the foreground (a repeated signal)
            // The previous process died in the foreground: its last heartbeat is its background.
            background =
                (try? await store.value(StateKey.lastActiveAt)).flatMap(Double.init).map { max($0, start) } ?? start
        }
        if let start, let background {
            let away = now.timeIntervalSince1970 - background
            if away <= configuration.sessionResumeWindow {
                try? await store.setValues([
                    StateKey.backgroundAt: nil, StateKey.lastActiveAt: String(now.timeIntervalSince1970)
                ])
                return
            }
            let duration = max(0, background - start)
            emit(
                ReservedEvent.sessionEnded, ["durationSec": .int(Int64(duration.rounded()))],
                at: Date(timeIntervalSince1970: background))
        }
        emit(ReservedEvent.appOpened, at: now)
        try? await store.setValues([
            StateKey.sessionStart: String(now.timeIntervalSince1970), StateKey.backgroundAt: nil,
            StateKey.lastActiveAt: String(now.timeIntervalSince1970)
        ])
    }

    // MARK: - Heartbeat

    private func startHeartbeat() {
        let interval = configuration.sessionHeartbeatInterval
        guard interval > 0 else { return }
        let clock = platform.clock
        state.withLock { s in
            s.inForeground = true
            guard s.heartbeat == nil else { return }
            s.heartbeat = clock.schedule(after: interval) { [weak self] in await self?.beat() }
        }
    }

    private func stopHeartbeat() {
        let work = state.withLock { s -> ScheduledWork? in
            s.inForeground = false
            defer { s.heartbeat = nil }
            return s.heartbeat
        }
        work?.cancel()
    }

    /// Records "still in the foreground" and schedules the next beat.
    private func beat() async {
        let clock = platform.clock
        let interval = configuration.sessionHeartbeatInterval
        let running = state.withLock { s -> Bool in
            s.heartbeat = nil
            return s.inForeground
        }
        guard running else { return }
        let now = clock.now()
        await jobs.run { [self] in
            try? await store.setValue(String(now.timeIntervalSince1970), for: StateKey.lastActiveAt)
        }
        state.withLock { s in
            guard s.inForeground, s.heartbeat == nil else { return }
            s.heartbeat = clock.schedule(after: interval) { [weak self] in await self?.beat() }
        }
    }
}
