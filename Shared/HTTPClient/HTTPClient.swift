import BuzzKitCore

/// An HTTP client over libcurl's multi interface, built for many concurrent requests.
///
/// One curl multi handle is driven by one dedicated thread (never Swift's cooperative pool), so
/// thousands of requests can be in flight while callers simply `await execute(_:)`. With the
/// default configuration it speaks HTTP/2 over TLS and multiplexes requests as streams on as few
/// connections as possible (the APNs use case); it falls back to HTTP/1.1 for `http://` URLs.
/// Easy handles are pooled and reused; connections are kept alive in the multi handle's cache.
///
/// Lifecycle: create once per process (or per upstream), share freely (`Sendable`), call
/// `shutdown()` when done; requests still running then fail with `HTTPClientError.Code.shutdown`.
/// Dropping the last reference also stops the thread, without waiting.
public final class HTTPClient: Sendable {
    public let configuration: Configuration
    private let engine: CurlEngine

    /// Starts the client's thread. Throws if libcurl cannot be initialised.
    public init(configuration: Configuration = Configuration(), logger: Logger) throws {
        self.configuration = configuration
        engine = try CurlEngine(configuration: configuration, logger: logger)
        engine.start()
    }

    deinit {
        engine.requestShutdown()
    }

    /// Sends `request` and returns the response, whatever its status.
    ///
    /// Throws `HTTPClientError` when no response arrived (see its `code` and `isRetryable`), and
    /// `CancellationError` when the calling task is cancelled (the transfer is then aborted: an
    /// HTTP/2 stream is reset, an HTTP/1.1 connection closed).
    public func execute(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        try Task.checkCancellation()
        let engine = self.engine
        let id = engine.makeID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                engine.submit(CurlEngine.Submission(id: id, request: request, completion: .single(continuation)))
                // If cancellation raced ahead of the submission, the cancel below follows it.
                if Task.isCancelled { engine.cancel(id) }
            }
        } onCancel: {
            engine.cancel(id)
        }
    }

    /// Sends every request at once (multiplexed like separate `execute` calls) and returns when the
    /// last one ended: one result per request, in order, whatever the statuses.
    ///
    /// Cheaper than one `execute` per request in its own task when requests come in groups (a
    /// chunk of pushes): one submission and one suspension for the batch. Task cancellation is
    /// not observed: every request runs to its own end (its timeout bounds it) or to `shutdown()`.
    public func execute(batch requests: [HTTPClientRequest]) async -> [HTTPClientBatchResult] {
        guard !requests.isEmpty else { return [] }
        let engine = self.engine
        return await withCheckedContinuation { continuation in
            let batch = CurlBatch(count: requests.count, continuation: continuation)
            var submissions: [CurlEngine.Submission] = []
            submissions.reserveCapacity(requests.count)
            for (index, request) in requests.enumerated() {
                submissions.append(
                    CurlEngine.Submission(
                        id: engine.makeID(), request: request,
                        completion: .batch(batch, index: index)))
            }
            engine.submit(batch: submissions)
        }
    }

    /// Fails every pending request with `.shutdown`, stops the thread and frees the curl handles.
    /// Later `execute` calls fail at once. Safe to call more than once.
    public func shutdown() async {
        engine.requestShutdown()
        await engine.waitForTermination()
    }

    /// How many connections this client has opened so far (sum of CURLINFO_NUM_CONNECTS over
    /// finished requests): with HTTP/2 multiplexing it stays near the number of hosts.
    public var connectionsOpened: Int {
        engine.connectionsOpened.load(ordering: .relaxed)
    }
}
