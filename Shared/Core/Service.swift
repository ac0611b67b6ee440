/// A long-lived part of a process: a connection pool, an HTTP server, a stream consumer, a timer loop.
///
/// `run()` does the work and returns only after `shutdown()` was called and everything in flight
/// finished (a consumer acks what it completed and nothing else). `ServiceGroup` starts services
/// in order and shuts them down in reverse, one at a time, awaiting each `run()` before asking the
/// next: an HTTP server stops taking requests before the consumers it feeds stop, and those
/// finish their in-flight work before the pools they use close.
public protocol Service: Sendable {
    /// A short name for logs ("http", "consumer.bk:ingest").
    var name: String { get }
    /// Runs until `shutdown()` has completed its work; throws only on a failure that should stop the process.
    func run() async throws
    /// Asks `run()` to finish: stop taking new work, complete what is in flight, then return.
    /// May return before that work is done: the group waits for `run()`, not for this.
    func shutdown() async
}
