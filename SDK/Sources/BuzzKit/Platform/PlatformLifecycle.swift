/// An app lifecycle or connectivity signal, as the platform reports it.
public enum LifecycleSignal: Sendable, Hashable {
    /// The app came to the foreground (starts or resumes a session).
    case foreground
    /// The app went to the background (ends the session's foreground time; flushes).
    case background
    /// The device got a network path back after having none (flushes).
    case online
}

/// The source of lifecycle signals: UIKit notifications and the network path monitor on iOS
/// (`UIKitLifecycle`), a fake in tests.
///
/// `start` is called once by the SDK; the platform calls `handler` for each signal and may await
/// it (fakes do, so a test knows the SDK has finished reacting).
public protocol PlatformLifecycle: Sendable {
    func start(_ handler: @escaping @Sendable (LifecycleSignal) async -> Void)
}

/// A lifecycle that never reports anything (Linux processes, and tests that send signals
/// straight to `BuzzKit.handle(_:)`).
public struct NoLifecycle: PlatformLifecycle {
    public init() {}
    public func start(_ handler: @escaping @Sendable (LifecycleSignal) async -> Void) {}
}
