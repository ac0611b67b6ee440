import BuzzKitWire
import Foundation

extension BuzzKit {
    /// Reacts to a lifecycle signal (the platform's `PlatformLifecycle` calls this; tests may too).
    ///
    /// Foreground starts a session (`$app.opened`) or, within `sessionResumeWindow` (30 s) of the
    /// last background, resumes it; later, the old session is closed first with `$session.ended`
    /// (`durationSec`, timestamped at the background moment). Background emits
    /// `$app.backgrounded` and flushes. Online flushes. With `automaticSessionTracking` off no
    /// session event is emitted, and background still flushes.
    public func handle(_ signal: LifecycleSignal) async {
        let now = platform.clock.now()
        switch signal {
        case .foreground:
            guard configuration.automaticSessionTracking else { return }
            await jobs.run { [self] in await enterForeground(at: now) }
        case .background:
            if configuration.automaticSessionTracking {
                emit(ReservedEvent.appBackgrounded, at: now)
                await jobs.run { [self] in
                    try? await store.setValue(String(now.timeIntervalSince1970), for: StateKey.backgroundAt)
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
        let start = (try? await store.value(StateKey.sessionStart)).flatMap(Double.init)
        let background = (try? await store.value(StateKey.backgroundAt)).flatMap(Double.init)
        if let start, let background {
            let away = now.timeIntervalSince1970 - background
            if away <= configuration.sessionResumeWindow {
                try? await store.setValue(nil, for: StateKey.backgroundAt)
                return
            }
            let duration = max(0, background - start)
            emit(ReservedEvent.sessionEnded, ["durationSec": .int(Int64(duration.rounded()))],
                 at: Date(timeIntervalSince1970: background))
        } else if start != nil, !firstInProcess {
            return  // already in the foreground (a repeated signal)
        }
        emit(ReservedEvent.appOpened, at: now)
        try? await store.setValues([StateKey.sessionStart: String(now.timeIntervalSince1970), StateKey.backgroundAt: nil])
    }
}
