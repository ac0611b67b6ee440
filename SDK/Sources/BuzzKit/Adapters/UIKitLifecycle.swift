#if canImport(UIKit) && !os(watchOS)
    import UIKit
    #if canImport(Network)
        import Network
    #endif

    /// Lifecycle signals from UIKit: `didBecomeActive` (foreground), `didEnterBackground`
    /// (background, with a background task so the flush can finish) and, through `NWPathMonitor`,
    /// the network path coming back (online).
    public struct UIKitLifecycle: PlatformLifecycle {
        public init() {}

        public func start(_ handler: @escaping @Sendable (LifecycleSignal) async -> Void) {
            let center = NotificationCenter.default
            // Block observers stay registered for the app's lifetime (the center retains them).
            _ = center.addObserver(forName: UIApplication.didBecomeActiveNotification, object: nil, queue: .main) { _ in
                Task { await handler(.foreground) }
            }
            _ = center.addObserver(forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: .main) {
                _ in
                Task { @MainActor in
                    let task = UIApplication.shared.beginBackgroundTask(
                        withName: "BuzzKit flush", expirationHandler: nil)
                    await handler(.background)
                    if task != .invalid { UIApplication.shared.endBackgroundTask(task) }
                }
            }
            #if canImport(Network)
                NetworkWatcher.shared.start { Task { await handler(.online) } }
            #endif
        }
    }

    #if canImport(Network)
        /// Reports transitions of the default network path from unsatisfied to satisfied.
        /// `@unchecked Sendable`: `monitor` and `wasSatisfied` are only touched on `queue` (serial).
        final class NetworkWatcher: @unchecked Sendable {
            static let shared = NetworkWatcher()

            private let monitor = NWPathMonitor()
            private let queue = DispatchQueue(label: "dev.buzzkit.network")
            private var wasSatisfied: Bool?
            private var started = false

            func start(_ onOnline: @escaping @Sendable () -> Void) {
                queue.async { [self] in
                    guard !started else { return }
                    started = true
                    monitor.pathUpdateHandler = { [weak self] path in
                        guard let self else { return }
                        let satisfied = path.status == .satisfied
                        if satisfied, self.wasSatisfied == false { onOnline() }
                        self.wasSatisfied = satisfied
                    }
                    monitor.start(queue: queue)
                }
            }
        }
    #endif
#endif
