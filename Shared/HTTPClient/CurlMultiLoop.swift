import BuzzKitCore
internal import CCurl

/// The engine thread's body: owns the multi handle's transfers and the pool of easy handles.
///
/// One loop iteration: take the inbox (new requests, cancellations, shutdown) under its lock,
/// add/remove easy handles, `curl_multi_perform`, collect finished transfers with
/// `curl_multi_info_read`, then sleep in `curl_multi_poll` until socket activity, a curl timer or a
/// `curl_multi_wakeup` from another thread. Nothing here is shared: not Sendable on purpose.
final class CurlMultiLoop {
    private let engine: CurlEngine
    private let multi: UnsafeMutableRawPointer
    private var pool: [CurlEasyHandle] = []
    /// Transfers in the multi handle, by easy handle (for CURLMSG_DONE) and by id (for cancel).
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var handleByID: [UInt64: UnsafeMutableRawPointer] = [:]
    /// Scratch space for request header lines (see `CurlRequestSetup.apply`).
    private var lineBuffer: [UInt8] = []

    private static let pollTimeoutMilliseconds: Int32 = 1000

    init(engine: CurlEngine) {
        self.engine = engine
        self.multi = engine.multi
    }

    func run() {
        engine.logger.debug("http client thread started")
        while true {
            let (submissions, cancellations, stopping) = engine.inbox.withLock { inbox in
                defer {
                    inbox.submissions.removeAll(keepingCapacity: true)
                    inbox.cancellations.removeAll(keepingCapacity: true)
                }
                return (inbox.submissions, inbox.cancellations, inbox.shutdownRequested)
            }
            if stopping {
                for submission in submissions {
                    submission.completion.finish(.failure(HTTPClientError.shutdown()))
                }
                break
            }
            for submission in submissions { start(submission) }
            for id in cancellations { cancel(id) }

            var running: Int32 = 0
            let performResult = curl_multi_perform(multi, &running)
            if performResult != CURLM_OK {
                engine.logger.error("curl_multi_perform failed", metadata: ["curl.code": "\(performResult.rawValue)"])
            }
            collectFinished()

            var ready: Int32 = 0
            _ = curl_multi_poll(multi, nil, 0, Self.pollTimeoutMilliseconds, &ready)
        }
        terminate()
    }

    // MARK: - Starting and ending transfers

    private func start(_ submission: CurlEngine.Submission) {
        guard let easy = pool.popLast() ?? CurlEasyHandle() else {
            submission.completion.finish(.failure(HTTPClientError(code: .other, message: "curl_easy_init failed")))
            return
        }
        let transfer = CurlTransfer(id: submission.id, easy: easy, completion: submission.completion)
        do {
            try CurlRequestSetup.apply(
                submission.request, configuration: engine.configuration, to: transfer,
                lineBuffer: &lineBuffer)
        } catch {
            curl_slist_free_all(transfer.headerList)
            curl_slist_free_all(transfer.resolveList)
            recycle(easy)
            submission.completion.finish(.failure(error))
            return
        }
        let added = curl_multi_add_handle(multi, easy.handle)
        guard added == CURLM_OK else {
            curl_slist_free_all(transfer.headerList)
            curl_slist_free_all(transfer.resolveList)
            recycle(easy)
            let text = curl_multi_strerror(added).map { String(cString: $0) } ?? "curl_multi_add_handle failed"
            submission.completion.finish(.failure(HTTPClientError(code: .other, message: text)))
            return
        }
        active[easy.handle] = transfer
        handleByID[submission.id] = easy.handle
    }

    private func cancel(_ id: UInt64) {
        guard let handle = handleByID[id], let transfer = detach(handle) else { return }
        transfer.completion.finish(.failure(CancellationError()))
    }

    private func collectFinished() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
            // Read the result before removing the handle: the message is invalid afterwards.
            let result = message.pointee.data.result
            complete(handle, result: result)
        }
    }

    private func complete(_ handle: UnsafeMutableRawPointer, result: CURLcode) {
        guard let transfer = active[handle] else { return }
        let outcome: Result<HTTPClientResponse, any Error>
        let newConnections = Self.infoLong(handle, CURLINFO_NUM_CONNECTS)
        if newConnections > 0 { engine.connectionsOpened.add(newConnections, ordering: .relaxed) }
        if result == CURLE_OK {
            var totalMicros: curl_off_t = 0
            _ = bk_curl_easy_getinfo_off(handle, CURLINFO_TOTAL_TIME_T, &totalMicros)
            outcome = .success(
                HTTPClientResponse(
                    status: Self.infoLong(handle, CURLINFO_RESPONSE_CODE),
                    headers: transfer.headers,
                    body: transfer.body,
                    httpVersion: Self.version(Self.infoLong(handle, CURLINFO_HTTP_VERSION)),
                    totalTime: .microseconds(totalMicros),
                    newConnections: newConnections))
        } else {
            outcome = .failure(HTTPClientError.fromCurl(result, detail: transfer.easy.errorMessage))
        }
        _ = detach(handle)
        transfer.completion.finish(outcome)
    }

    /// Removes a transfer from the multi handle and the tables and recycles its easy handle.
    /// The caller finishes the transfer's completion.
    private func detach(_ handle: UnsafeMutableRawPointer) -> CurlTransfer? {
        guard let transfer = active.removeValue(forKey: handle) else { return nil }
        handleByID[transfer.id] = nil
        curl_multi_remove_handle(multi, handle)
        curl_slist_free_all(transfer.headerList)
        transfer.headerList = nil
        curl_slist_free_all(transfer.resolveList)
        transfer.resolveList = nil
        recycle(transfer.easy)
        return transfer
    }

    private func recycle(_ easy: CurlEasyHandle) {
        if pool.count < engine.configuration.maxPooledHandles {
            easy.reset()
            pool.append(easy)
        } else {
            easy.destroy()
        }
    }

    /// Fails what is in flight, frees every curl handle, then wakes `waitForTermination` callers.
    private func terminate() {
        for handle in Array(active.keys) {
            if let transfer = detach(handle) {
                transfer.completion.finish(.failure(HTTPClientError.shutdown()))
            }
        }
        for easy in pool { easy.destroy() }
        pool.removeAll()
        curl_multi_cleanup(multi)
        let waiters = engine.inbox.withLock { inbox in
            inbox.terminated = true
            defer { inbox.terminationWaiters.removeAll() }
            return inbox.terminationWaiters
        }
        engine.logger.debug("http client thread stopped")
        for waiter in waiters { waiter.resume() }
    }

    // MARK: - Info

    private static func infoLong(_ handle: UnsafeMutableRawPointer, _ info: CURLINFO) -> Int {
        var value = 0
        _ = bk_curl_easy_getinfo_long(handle, info, &value)
        return value
    }

    private static func version(_ raw: Int) -> HTTPVersion {
        switch raw {
        case Int(CURL_HTTP_VERSION_1_0): .http1_0
        case Int(CURL_HTTP_VERSION_1_1): .http1_1
        case Int(CURL_HTTP_VERSION_2_0): .http2
        case Int(CURL_HTTP_VERSION_3): .http3
        default: .unknown
        }
    }
}
