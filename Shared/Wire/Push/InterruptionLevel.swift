/// How urgently iOS presents a notification (`aps.interruption-level`). Default (absent): `active`.
public enum InterruptionLevel: String, Sendable, Hashable, CaseIterable {
    case passive
    case active
    case timeSensitive = "time-sensitive"
    /// Needs Apple's critical alerts entitlement in the app.
    case critical
}
