import BuzzKitWire
import Foundation
import Synchronization

/// The BuzzKit SDK: the offline event queue, sessions, push routing, local plans and Live
/// Activity tokens.
///
/// Apps use the static facade (`BuzzKit.configure(_:)`, `BuzzKit.track(_:data:)`, ...), which
/// forwards to one shared instance. Tests, and apps that want several, create instances directly
/// with a `Platform` of their choosing and call `start()`:
/// ```swift
/// let client = try BuzzKit(configuration: configuration, platform: fakes)
/// await client.start()
/// ```
public final class BuzzKit: Sendable {
    /// `BuzzKit.Configuration(apiKey:baseURL:)`.
    public typealias Configuration = BuzzKitConfiguration

    public let configuration: Configuration
    let platform: Platform
    let store: EventStore
    let api: APIClient
    let logger: SDKLogger
    /// Named action handlers for this instance.
    public let actions: ActionRegistry
    /// Live Activity token registration for this instance.
    public let activities: Activities

    /// Ordered writes (tracks, identity and session changes).
    let jobs = SerialRunner()
    /// Flushes, one at a time.
    let flushes = SerialRunner()
    let state: Mutex<ClientState>

    struct ClientState: Sendable {
        var anonymousId: String
        var subscriberId: String?
        /// The signature `identify(_:signature:)` was given for `subscriberId` (lowercased).
        var subscriberSignature: String?
        var delegate: (any BuzzKitDelegate)?
        var deepLinkHandler: DeepLinkHandler?
        var flushTimer: (deadline: Date, work: ScheduledWork)?
        var started = false
        var foregroundSeen = false
        /// Consecutive flushes that ended in a network failure (0 after a pass that finished).
        var consecutiveFailures = 0
        /// While set, flushes triggered by tracks wait for the backoff's retry at this moment.
        var backoffUntil: Date?
        /// In the foreground as far as session tracking knows (the heartbeat runs meanwhile).
        var inForeground = false
        var heartbeat: ScheduledWork?
        var pushesStarted = false
        /// Queued preference changes the server refused or that were given up, by queue row, for
        /// the `Preferences.update` call that waits for its row (the newest 32).
        var droppedPreferenceChanges: [Int64: PreferencesError] = [:]
    }

    /// Opens the queue database (in the app group's container when `appGroup` is set, else in
    /// `storageDirectory`, else Application Support/BuzzKit) and reads the stored identity.
    /// Nothing runs until `start()`.
    public init(configuration: Configuration, platform: Platform = .current, actions: ActionRegistry = ActionRegistry())
        throws
    {
        self.configuration = configuration
        self.platform = platform
        self.actions = actions
        logger = SDKLogger(handler: configuration.logHandler)
        store = try EventStore(directory: try Self.storageDirectory(for: configuration))
        api = APIClient(
            transport: platform.transport, baseURL: configuration.baseURL, apiKey: configuration.apiKey,
            store: store, logger: logger)
        var anonymousId = try store.valueNow(StateKey.anonymousId)
        if anonymousId == nil {
            let fresh = Self.newIdentifier()
            try store.setValueNow(fresh, for: StateKey.anonymousId)
            anonymousId = fresh
        }
        let subscriberId = try store.valueNow(StateKey.subscriberId)
        let signature = subscriberId == nil ? nil : try store.valueNow(StateKey.subscriberSignature)
        state = Mutex(
            ClientState(
                anonymousId: anonymousId ?? Self.newIdentifier(), subscriberId: subscriberId,
                subscriberSignature: signature))
        activities = Activities()
        activities.attach(self)
    }

    /// Starts what `configure` starts: lifecycle signals, `$app.installed` / `$app.updated`, the
    /// settings the notification service extension reads, the flush 5 s after configure, and,
    /// with `automaticPushHandling`, the platform's notification source (silent pushes, opens,
    /// dismissals and the device token reach the SDK without app code). Calling it again does
    /// nothing.
    public func start() async {
        let first = state.withLock { s -> Bool in
            defer { s.started = true }
            return !s.started
        }
        guard first else { return }
        let environment = configuration.pushEnvironment ?? .detected
        do {
            try await store.setValues([
                StateKey.apiKey: configuration.apiKey, StateKey.baseURL: configuration.baseURL.absoluteString,
                StateKey.pushEnvironment: environment.rawValue
            ])
        } catch {
            logger.error("cannot store settings", ["error": String(describing: error)])
        }
        await recordAppVersion()
        await checkPermission()
        scheduleFlush(after: configuration.flushDelayAfterConfigure)
        platform.lifecycle.start { [weak self] signal in await self?.handle(signal) }
        startPushHandling()
    }

    /// With `automaticPushHandling`, starts the platform's push source (once); without, nothing.
    /// `configure` calls it synchronously so the source is in place before the launch returns.
    func startPushHandling() {
        guard configuration.automaticPushHandling else { return }
        let first = state.withLock { s -> Bool in
            defer { s.pushesStarted = true }
            return !s.pushesStarted
        }
        guard first else { return }
        platform.pushes.start { [weak self] event in await self?.handle(event) ?? .noData }
    }

    /// The identity events tracked now are sent under.
    public var identity: EventIdentity {
        state.withLock { s in s.subscriberId.map(EventIdentity.subscriber) ?? .anonymous(s.anonymousId) }
    }

    /// This installation's anonymous id (new after `reset()`).
    public var anonymousId: String { state.withLock { $0.anonymousId } }

    /// The delegate asked first about deep links and told about opens. Held strongly.
    public var delegate: (any BuzzKitDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// Registers the closure that routes deep links no delegate took (route 2 of 3).
    public func onDeepLink(_ handler: @escaping DeepLinkHandler) {
        state.withLock { $0.deepLinkHandler = handler }
    }

    /// Events in the queue, after every track made before this call was written.
    public func pendingEventCount() async -> Int {
        await jobs.drain()
        do { return try await store.count() } catch {
            logger.error("cannot count queued events", ["error": String(describing: error)])
            return 0
        }
    }

    /// Waits until every track made before this call is on disk (and its cancelOn handled).
    public func waitForPendingWrites() async { await jobs.drain() }

    // MARK: - Internals

    static func newIdentifier() -> String { UUID().uuidString.lowercased() }

    static func storageDirectory(for configuration: Configuration) throws -> URL {
        if let group = configuration.appGroup {
            #if canImport(Darwin)
                if let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group) {
                    return container.appendingPathComponent("BuzzKit", isDirectory: true)
                }
            #endif
            if let directory = configuration.storageDirectory { return directory }
            throw StorageUnavailable(message: "the app group \(group) has no container (check the entitlement)")
        }
        if let directory = configuration.storageDirectory { return directory }
        let support = try FileManager.default.url(
            for: .applicationSupportDirectory, in: .userDomainMask,
            appropriateFor: nil, create: true)
        return support.appendingPathComponent("BuzzKit", isDirectory: true)
    }

    private func recordAppVersion() async {
        do {
            let version = try await store.value(StateKey.appVersion)
            let build = try await store.value(StateKey.appBuild)
            let current = (configuration.appVersion, configuration.appBuild)
            if version == nil && build == nil {
                emit(ReservedEvent.appInstalled, ["version": .string(current.0), "build": .string(current.1)])
            } else if version != current.0 || build != current.1 {
                emit(
                    ReservedEvent.appUpdated,
                    [
                        "fromVersion": .string(version ?? ""), "toVersion": .string(current.0),
                        "fromBuild": .string(build ?? ""), "toBuild": .string(current.1)
                    ])
            } else {
                return
            }
            await jobs.drain()
            try await store.setValues([StateKey.appVersion: current.0, StateKey.appBuild: current.1])
        } catch {
            logger.error("cannot read the stored app version", ["error": String(describing: error)])
        }
    }
}

/// The storage the SDK needs is not there (an app group without its entitlement).
public struct StorageUnavailable: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
