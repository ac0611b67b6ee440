import BuzzKitCore
import BuzzKitWire
internal import CMicroHTTPD
import Synchronization

/// The part of the server libmicrohttpd calls into: request assembly, dispatch, suspend/resume.
///
/// `@unchecked Sendable`: its stored properties are immutable or atomics/Mutex-protected; it is
/// shared between MHD's threads (through the `void *` closure argument) and handler tasks.
final class ServerCore: @unchecked Sendable {
    /// Requests whose connection is suspended while their handler runs: an intrusive doubly
    /// linked list through `RequestState.registryPrevious/Next` (no hashing, no allocation, a
    /// short critical section: the lock is taken by network threads and handlers alike).
    struct Registry {
        /// Set by `shutdown()` when the grace period is over: no more suspensions.
        var stopping = false
        var head: RequestState?

        mutating func insert(_ state: RequestState) {
            guard !state.registered else { return }
            state.registered = true
            state.registryNext = head
            state.registryPrevious = nil
            head?.registryPrevious = state
            head = state
        }

        mutating func remove(_ state: RequestState) {
            guard state.registered else { return }
            state.registered = false
            let next = state.registryNext
            if let previous = state.registryPrevious { previous.registryNext = next } else { head = next }
            next?.registryPrevious = state.registryPrevious
            state.registryNext = nil
            state.registryPrevious = nil
        }

        var all: [RequestState] {
            var states: [RequestState] = []
            var cursor = head
            while let state = cursor {
                states.append(state)
                cursor = state.registryNext
            }
            return states
        }
    }

    let configuration: HTTPServer.Configuration
    let router: Router
    let logger: Logger
    let observer: (@Sendable (RequestLog) -> Void)?

    /// Requests between their first access-handler call and NOTIFY_COMPLETED.
    let active = Atomic<Int>(0)
    /// Set by `shutdown()`: responses carry `Connection: close`.
    let draining = Atomic<Bool>(false)
    let registry = Mutex(Registry())

    init(
        configuration: HTTPServer.Configuration, router: Router, logger: Logger,
        observer: (@Sendable (RequestLog) -> Void)?
    ) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        self.observer = observer
    }

    // MARK: - Access handler

    func handle(
        connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
        uploadData: UnsafePointer<CChar>?, uploadDataSize: UnsafeMutablePointer<Int>,
        conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = conCls.pointee else {
            // First call: headers only. Respond here only to refuse an oversized body (MHD then
            // closes the connection, which is what we want for a body we will not read).
            let state = RequestState(connection: connection)
            conCls.pointee = Unmanaged.passRetained(state).toOpaque()
            active.add(1, ordering: .relaxed)
            if let value = MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, "Content-Length"),
                let length = Int(String(cString: value)), length > configuration.maxBodyBytes
            {
                state.tooLarge = true
                state.method = String(cString: method)
                state.requestId = RequestID.accepting(headerValue(connection, "X-Request-Id"))
                return queue(.error(.payloadTooLarge(limit: configuration.maxBodyBytes)), state: state)
            }
            return .YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()

        if state.suspended {
            // Called again after MHD_resume_connection: the handler's response is ready.
            state.suspended = false
            let response = state.takeResponse() ?? .error(.internalError)
            return queue(response, state: state)
        }

        if uploadDataSize.pointee > 0 {
            let size = uploadDataSize.pointee
            if !state.tooLarge, let uploadData {
                if state.body.count + size > configuration.maxBodyBytes {
                    state.tooLarge = true
                    state.body = []
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                        state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
                    }
                }
            }
            uploadDataSize.pointee = 0
            return .YES
        }

        // Final call: the whole request is here.
        return dispatch(connection: connection, url: url, method: method, state: state)
    }

    private func dispatch(
        connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
        state: RequestState
    ) -> MHD_Result {
        var request = makeRequest(connection: connection, url: url, method: method, state: state)
        state.method = request.method
        state.requestId = request.requestId
        if state.tooLarge {
            return queue(.error(.payloadTooLarge(limit: configuration.maxBodyBytes)), state: state)
        }
        switch router.match(method: request.method, path: request.path) {
        case .notFound:
            return queue(.error(APIError(.notFound, "no route for \(request.method) \(request.path)")), state: state)
        case .methodNotAllowed(let allow):
            let allowText = allow.joined(separator: ", ")
            return queue(
                .error(
                    APIError(.methodNotAllowed, "\(request.method) is not allowed here; allowed: \(allowText)"),
                    headers: ["Allow": allowText]), state: state)
        case .found(let route, let parameters):
            request.pathParameters = parameters
            request.routePattern = route.pattern
            state.routePattern = route.pattern
            if let inline = route.inline {
                return queue(runInline(inline, request), state: state)
            }
            if let answering = route.answering {
                switch answering(request) {
                case .now(let response): return queue(response, state: state)
                case .task(let handler): return suspendAndRun(handler, request: request, state: state)
                case .deferred(let start): return suspendAndDefer(start, state: state)
                }
            }
            return suspendAndRun(route.handler, request: request, state: state)
        }
    }

    /// Registers and suspends under one lock, so shutdown's forced completion never resumes a
    /// connection that is not suspended yet. False when the server is stopping.
    private func suspend(_ state: RequestState) -> Bool {
        registry.withLock { registry -> Bool in
            if registry.stopping { return false }
            registry.insert(state)
            state.suspended = true
            MHD_suspend_connection(state.connection)
            return true
        }
    }

    private func suspendAndRun(_ handler: @escaping Router.Handler, request: Request, state: RequestState) -> MHD_Result
    {
        guard suspend(state) else {
            return queue(.error(APIError(.notReady, "the server is shutting down")), state: state)
        }
        let work = Task {
            let response = await self.runAsync(handler, request)
            state.complete(with: response, core: self)
        }
        startDeadline(state, cancelling: work)
        return .YES
    }

    /// Suspends the connection and lets `start` arrange the answer (see `Answer.deferred`).
    private func suspendAndDefer(_ start: @Sendable (Responder) -> Void, state: RequestState) -> MHD_Result {
        guard suspend(state) else {
            return queue(.error(APIError(.notReady, "the server is shutting down")), state: state)
        }
        startDeadline(state, cancelling: nil)
        start(Responder(state: state, core: self))
        return .YES
    }

    private func startDeadline(_ state: RequestState, cancelling work: Task<Void, Never>?) {
        guard let deadline = configuration.handlerDeadline else { return }
        let timer = Task {
            guard (try? await Task.sleep(for: deadline)) != nil else { return }
            if state.complete(
                with: .error(APIError(.upstreamTimeout, "the request did not complete in time")),
                core: self)
            {
                work?.cancel()
            }
        }
        state.attachTimer(timer)
    }

    func unregisterSuspended(_ state: RequestState) {
        registry.withLock { $0.remove(state) }
    }

    // MARK: - Running handlers

    private func runInline(_ handler: Router.SyncHandler, _ request: Request) -> Response {
        do {
            return try handler(request)
        } catch {
            return response(for: error, request: request)
        }
    }

    private func runAsync(_ handler: Router.Handler, _ request: Request) async -> Response {
        do {
            return try await handler(request)
        } catch {
            return response(for: error, request: request)
        }
    }

    private func response(for error: any Error, request: Request) -> Response {
        if let apiError = error as? APIError { return .error(apiError) }
        logger.error(
            "request handler failed",
            metadata: [
                "request.id": request.requestId, "http.method": request.method, "http.route": request.routePattern,
                "error": String(describing: error)
            ])
        return .error(.internalError)
    }

    // MARK: - Request assembly

    private func makeRequest(
        connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
        state: RequestState
    ) -> Request {
        var fields: [HTTPHeaders.Field] = []
        withUnsafeMutablePointer(to: &fields) { pointer in
            _ = MHD_get_connection_values(connection, MHD_ValueKind.HEADER_KIND, bkCollectHeader, pointer)
        }
        var arguments: [(name: String, value: String?)] = []
        withUnsafeMutablePointer(to: &arguments) { pointer in
            _ = MHD_get_connection_values(connection, MHD_ValueKind.GET_ARGUMENT_KIND, bkCollectArgument, pointer)
        }
        var address: String?
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            if bk_mhd_client_address(connection, buffer.baseAddress, 64) == 0 {
                address = String(cString: buffer.baseAddress!)
            }
        }
        let body = state.body
        state.body = []
        return Request(
            method: String(cString: method), path: String(cString: url),
            rawQuery: Self.rawQuery(arguments), headers: HTTPHeaders(fields: fields), body: body,
            remoteAddress: address)
    }

    /// Rebuilds the query string from MHD's arguments (escapes are kept by our unescaper; MHD has
    /// already turned `+` into a space, which goes back to `+`).
    static func rawQuery(_ arguments: [(name: String, value: String?)]) -> String {
        guard !arguments.isEmpty else { return "" }
        var parts: [String] = []
        parts.reserveCapacity(arguments.count)
        for argument in arguments {
            let name = argument.name.replacing(" ", with: "+")
            if let value = argument.value {
                parts.append(name + "=" + value.replacing(" ", with: "+"))
            } else {
                parts.append(name)
            }
        }
        return parts.joined(separator: "&")
    }

    private func headerValue(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, name).map { String(cString: $0) }
    }

    // MARK: - Responding

    private func queue(_ response: Response, state: RequestState) -> MHD_Result {
        let body = response.bodyBytes(requestId: state.requestId)
        let mhdResponse = body.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(
                buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress),
                MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
        }
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        var hasContentType = false
        var hasRequestId = false
        for field in response.headers {
            if HTTPHeaders.equalNames(field.name, "Content-Type") { hasContentType = true }
            if HTTPHeaders.equalNames(field.name, "X-Request-Id") { hasRequestId = true }
            _ = MHD_add_response_header(mhdResponse, field.name, field.value)
        }
        if !hasContentType, response.isEnvelope {
            _ = MHD_add_response_header(mhdResponse, "Content-Type", Response.jsonContentType)
        }
        if !hasRequestId {
            _ = MHD_add_response_header(mhdResponse, "X-Request-Id", state.requestId)
        }
        if draining.load(ordering: .relaxed) {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        let status = response.status >= 100 && response.status <= 999 ? response.status : 500
        let result = MHD_queue_response(state.connection, UInt32(status), mhdResponse)
        if let observer {
            observer(
                RequestLog(
                    method: state.method, route: state.routePattern, status: status,
                    duration: ContinuousClock.now - state.started, requestId: state.requestId))
        }
        return result
    }

    // MARK: - Completion

    func completed(conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let conCls, let raw = conCls.pointee else { return }
        conCls.pointee = nil
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
        if state.suspended {
            // Cannot happen (a suspended connection is not processed); keep the registry exact anyway.
            unregisterSuspended(state)
        }
        active.subtract(1, ordering: .relaxed)
    }

    // MARK: - Shutdown support

    /// Stops further suspensions and answers every request still waiting on its handler.
    func forceCompleteSuspended(with response: Response) {
        let waiting = registry.withLock { registry -> [RequestState] in
            registry.stopping = true
            return registry.all
        }
        for state in waiting { state.complete(with: response, core: self) }
    }
}
