import BuzzKitWire
import Synchronization

/// Named action handlers: the app registers them once by name, and any message or workflow step
/// can name one with data chosen on the server (`bk.action {name, data}`).
///
/// ```swift
/// BuzzKit.actions.register("show_offer") { action in
///     guard case .string(let offerId)? = action.data["offerId"] else { return }
///     paywall.present(offerId: offerId)
/// }
/// ```
/// Registering a name again replaces its handler. Handlers run on the main actor.
public final class ActionRegistry: Sendable {
    public typealias Handler = @MainActor @Sendable (PushAction) -> Void

    private let handlers = Mutex<[String: Handler]>([:])

    public init() {}

    public func register(_ name: String, _ handler: @escaping Handler) {
        handlers.withLock { $0[name] = handler }
    }

    public func unregister(_ name: String) {
        _ = handlers.withLock { $0.removeValue(forKey: name) }
    }

    /// The names with a handler, sorted.
    public var registeredNames: [String] { handlers.withLock { $0.keys.sorted() } }

    func handler(for name: String) -> Handler? { handlers.withLock { $0[name] } }
}
