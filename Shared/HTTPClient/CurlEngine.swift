import BuzzKitCore
internal import CCurl
import Foundation
import Synchronization

/// The part of the client other threads touch: the multi handle (only for `curl_multi_wakeup`,
/// which libcurl documents as callable from any thread) and a Mutex-guarded inbox of submissions,
/// cancellations and the shutdown request. Everything else about the multi handle belongs to the
/// one engine thread running `CurlMultiLoop`.
///
/// `@unchecked Sendable`: `multi` is used off the engine thread only by `curl_multi_wakeup`, always
/// under the inbox lock and only before the shutdown flag is set; the engine thread frees the
/// handle only after it has seen that flag under the same lock. All other state is in the Mutex or
/// in atomics.
final class CurlEngine: @unchecked Sendable {
    struct Submission {
        let id: UInt64
        let request: HTTPClientRequest
        let completion: CurlCompletion
    }

    struct Inbox {
        var submissions: [Submission] = []
        var cancellations: [UInt64] = []
        var shutdownRequested = false
        var terminated = false
        var terminationWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let multi: UnsafeMutableRawPointer
    let configuration: HTTPClient.Configuration
    let logger: Logger
    let inbox = Mutex(Inbox())
    let connectionsOpened = Atomic<Int>(0)
    private let nextID = Atomic<UInt64>(1)

    /// curl_global_init is not safe to race with other curl calls: run it once, lazily.
    private static let globalInit: CURLcode = bk_curl_global_init_default()

    init(configuration: HTTPClient.Configuration, logger: Logger) throws {
        let initResult = Self.globalInit
        guard initResult == CURLE_OK else {
            throw HTTPClientError.fromCurl(initResult, detail: "curl_global_init failed")
        }
        guard let multi = curl_multi_init() else {
            throw HTTPClientError(code: .other, message: "curl_multi_init failed")
        }
        self.multi = multi
        self.configuration = configuration
        self.logger = logger
        let multiplex = configuration.httpVersion != .http1_1
        _ = bk_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, multiplex ? CURLPIPE_MULTIPLEX : CURLPIPE_NOTHING)
        _ = bk_curl_multi_setopt_long(
            multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, configuration.maxConcurrentStreams))
        if let limit = configuration.maxConnectionsPerHost {
            _ = bk_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, limit))
        }
    }

    /// Starts the engine thread. Called once, by `HTTPClient.init`.
    func start() {
        NamedThread.start("bk-http-client") { [self] in CurlMultiLoop(engine: self).run() }
    }

    func makeID() -> UInt64 {
        nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Queues a request for the engine thread; fails it at once after shutdown.
    func submit(_ submission: Submission) {
        let accepted = inbox.withLock { inbox -> Bool in
            guard !inbox.shutdownRequested else { return false }
            let wasIdle = inbox.submissions.isEmpty && inbox.cancellations.isEmpty
            inbox.submissions.append(submission)
            // A non-empty inbox means a wakeup is already pending (the socketpair write sticks
            // until the thread polls), so one wakeup per batch is enough.
            if wasIdle { curl_multi_wakeup(multi) }
            return true
        }
        if !accepted { submission.completion.finish(.failure(HTTPClientError.shutdown())) }
    }

    /// Queues several requests at once (one lock, at most one wakeup); fails them all after shutdown.
    func submit(batch submissions: [Submission]) {
        guard !submissions.isEmpty else { return }
        let accepted = inbox.withLock { inbox -> Bool in
            guard !inbox.shutdownRequested else { return false }
            let wasIdle = inbox.submissions.isEmpty && inbox.cancellations.isEmpty
            inbox.submissions.append(contentsOf: submissions)
            if wasIdle { curl_multi_wakeup(multi) }
            return true
        }
        if !accepted {
            for submission in submissions { submission.completion.finish(.failure(HTTPClientError.shutdown())) }
        }
    }

    /// Asks the engine thread to drop request `id`; harmless if it already finished.
    func cancel(_ id: UInt64) {
        inbox.withLock { inbox in
            guard !inbox.shutdownRequested else { return }
            let wasIdle = inbox.submissions.isEmpty && inbox.cancellations.isEmpty
            inbox.cancellations.append(id)
            if wasIdle { curl_multi_wakeup(multi) }
        }
    }

    /// Tells the engine thread to fail everything and stop; returns at once.
    func requestShutdown() {
        inbox.withLock { inbox in
            guard !inbox.shutdownRequested else { return }
            inbox.shutdownRequested = true
            curl_multi_wakeup(multi)
        }
    }

    /// Waits until the engine thread has released every curl handle.
    func waitForTermination() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = inbox.withLock { inbox -> Bool in
                if inbox.terminated { return true }
                inbox.terminationWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
