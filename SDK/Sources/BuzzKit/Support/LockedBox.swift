import Synchronization

/// A value behind a lock, for the few globals the platform adapters keep alive.
final class LockedBox<T: Sendable>: Sendable {
    private let storage: Mutex<T>
    init(_ value: T) { storage = Mutex(value) }
    func set(_ value: T) { storage.withLock { $0 = value } }
    var value: T { storage.withLock { $0 } }
}
