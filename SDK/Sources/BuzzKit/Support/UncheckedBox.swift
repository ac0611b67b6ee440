/// Carries a non-Sendable value (a UIKit completion handler) into a task that calls it once.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
