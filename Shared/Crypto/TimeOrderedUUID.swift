import BuzzKitWire
import Foundation

extension UUID {
    /// A version 7 UUID whose bits after the time are name-based (the SHA-256 of `name`): the same
    /// time and name always give the same id. A workflow send's message id: its run's time with
    /// the run, step and purpose, so a step done again names the same message in the same week.
    public static func timeOrdered(at date: Date, name: String) -> UUID {
        timeOrdered(at: date, bits: Array(Digest.sha256(Array(name.utf8)).prefix(16)))
    }
}
