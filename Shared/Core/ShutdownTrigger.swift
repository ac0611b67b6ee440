/// A one-shot shutdown request carrying its reason.
final class ShutdownTrigger: Sendable {
    private let reason = OneShot<String>()

    func fire(reason text: String) { reason.fulfill(text) }

    /// The reason, or "cancelled" when the waiting task is cancelled first.
    func wait() async -> String { (try? await reason.wait()) ?? "cancelled" }
}
