import BuzzKitCore
import Foundation
import Synchronization

/// One `LISTEN` on its own connection and thread, feeding an `AsyncThrowingStream`.
///
/// `@unchecked Sendable`: the connection handle is used only by the listener's own thread (the
/// loop in `run`); the other members are immutable or atomic. When the connection breaks, it is
/// reopened every half second and `LISTEN` issued again; notifications sent while it was down are
/// lost (NOTIFY is not durable). The loop ends when the stream's consumer goes away or the client
/// shuts down.
final class PostgresListener: @unchecked Sendable {
    let channel: String
    private let handle: PostgresConnectionHandle
    private let logger: Logger
    private let continuation: AsyncThrowingStream<PostgresNotification, any Error>.Continuation
    private let stopped = Atomic<Bool>(false)

    init(
        channel: String, configuration: PostgresConfiguration, logger: Logger,
        continuation: AsyncThrowingStream<PostgresNotification, any Error>.Continuation
    ) {
        self.channel = channel
        self.handle = PostgresConnectionHandle(configuration: configuration, logger: logger)
        self.logger = logger
        self.continuation = continuation
    }

    /// Starts the thread; `ready` resumes once `LISTEN` is in place (or failed).
    func start(ready: CheckedContinuation<Void, any Error>) {
        NamedThread.start("postgres-listen") { [self] in run(ready: ready) }
    }

    func stop() { stopped.store(true, ordering: .releasing) }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    private func open() throws {
        try handle.connect()
        try handle.executeScript("LISTEN " + PostgresIdentifier.quote(channel))
    }

    private func run(ready: CheckedContinuation<Void, any Error>) {
        do {
            try open()
            ready.resume()
        } catch {
            handle.close()
            ready.resume(throwing: error)
            continuation.finish(throwing: error)
            return
        }
        while !isStopped {
            do {
                for notification in try handle.waitForNotifications(timeoutMilliseconds: 100) {
                    continuation.yield(notification)
                }
            } catch {
                logger.warning(
                    "postgres.listen.reconnect", metadata: ["postgres.channel": channel, "error": "\(error)"])
                handle.close()
                while !isStopped {
                    Thread.sleep(forTimeInterval: 0.5)
                    do {
                        try open()
                        break
                    } catch { continue }
                }
            }
        }
        handle.close()
        continuation.finish()
    }
}

extension PostgresClient {
    /// Subscribes to `channel` on a dedicated connection and returns its notifications.
    ///
    /// Returns once `LISTEN` is in place, so a `notify` sent after this returns is delivered.
    /// The subscription ends when the consumer stops iterating (the stream is dropped or its task
    /// cancelled) or on `shutdown()`; a broken connection is reopened (notifications sent while it
    /// was down are lost, as NOTIFY is not durable).
    public func listen(_ channel: String) async throws -> AsyncThrowingStream<PostgresNotification, any Error> {
        let (stream, continuation) = AsyncThrowingStream<PostgresNotification, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(10_000))
        let listener = PostgresListener(
            channel: channel, configuration: configuration, logger: logger, continuation: continuation)
        try register(listener)
        continuation.onTermination = { [weak self, listener] _ in
            listener.stop()
            self?.unregister(listener)
        }
        do {
            try await withCheckedThrowingContinuation { listener.start(ready: $0) }
        } catch {
            unregister(listener)
            throw error
        }
        return stream
    }

    /// Sends `NOTIFY channel, payload` (via `pg_notify`, so any channel name and payload work).
    public func notify(_ channel: String, payload: String = "") async throws {
        _ = try await query("SELECT pg_notify($1, $2)", [channel, payload])
    }
}
