/// A one-shot shutdown request carrying its reason.
final class ShutdownTrigger: Sendable {
    private let reason = OneShot<String>()

    func fire(reason text: String) { reason.fulfill(text) }

    func wait() async -> String { await reason.value }
}
