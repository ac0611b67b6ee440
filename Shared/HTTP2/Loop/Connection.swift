import BuzzKitCore
internal import CNghttp2
internal import COpenSSL
import Foundation

/// One TLS connection carrying an nghttp2 client session, on the loop thread.
///
/// States: resolving -> connecting (non-blocking TCP connect) -> handshaking (TLS, ALPN `h2`,
/// certificate checked for the host) -> awaitingSettings (our preface sent, the server's SETTINGS
/// not yet here: its stream limit is unknown, so nothing is sent yet) -> open -> draining (a
/// GOAWAY arrived: no new streams; the ones at or below its last stream id finish) -> closed.
///
/// nghttp2 runs through its memory API: bytes read with SSL_read go to `nghttp2_session_mem_recv`
/// (its callbacks, in SessionCallbacks.swift, finish requests), and the frames it has to send are
/// gathered with `nghttp2_session_mem_send` into one buffer written with one SSL_write, so a
/// batch of requests costs a few system calls, not a few per request.
final class Connection {
    enum State {
        case resolving, connecting, handshaking, awaitingSettings, open, draining, closed
    }

    let id: UInt64
    unowned let channel: Channel
    unowned let loop: EventLoopRunner
    private(set) var state = State.resolving
    let connectDeadline: ContinuousClock.Instant
    var fd: Int32 = -1
    var interest: UInt32 = 0
    var isDirty = false
    private var ssl: OpaquePointer?
    private var session: OpaquePointer?
    /// Streams submitted and not yet closed.
    private var openStreams = 0
    private var streamsSubmitted = 0
    /// Frames produced by nghttp2 and not yet taken by SSL_write.
    private var output: [UInt8] = []
    private var outputOffset = 0
    /// SSL_read asked to write (a TLS key update) or SSL_write asked to read.
    private var readWantsWrite = false

    static let writeBatch = 64 * 1024

    init(id: UInt64, channel: Channel, loop: EventLoopRunner) {
        self.id = id
        self.channel = channel
        self.loop = loop
        connectDeadline = loop.now + channel.configuration.connectTimeout
        output.reserveCapacity(Self.writeBatch)
    }

    /// Still on its way to usable (a connect deadline applies).
    var isConnecting: Bool {
        state == .resolving || state == .connecting || state == .handshaking || state == .awaitingSettings
    }

    /// Open and accepting new streams.
    var isUsable: Bool { state == .open }

    /// Streams that may still be opened on it now.
    var freeStreams: Int {
        guard state == .open, let session else { return 0 }
        let remote = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        return max(0, min(channel.configuration.maxConcurrentStreams, remote) - openStreams)
    }

    // MARK: - Connecting

    func resolved(_ result: Result<SocketAddress, HTTP2Error>) {
        guard state == .resolving else { return }
        switch result {
        case .success(let address): connect(to: address)
        case .failure(let error): close(error)
        }
    }

    func connect(to address: SocketAddress) {
        let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        fd = socket(address.family, socketType, 0)
        guard fd >= 0 else {
            close(HTTP2Error(.connectFailed, "socket() failed: \(Self.errorText(errno))"))
            return
        }
        if channel.configuration.tcpNoDelay {
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        state = .connecting
        let result = address.bytes.withUnsafeBytes { raw in
            Glibc.connect(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        if result == 0 {
            startTLS()
        } else if errno == EINPROGRESS {
            loop.setInterest(self, EPOLLOUT.rawValue)
        } else {
            close(HTTP2Error(.connectFailed, "cannot connect to \(channel.spec.authority): \(Self.errorText(errno))"))
        }
    }

    func handle(events: UInt32) {
        switch state {
        case .connecting:
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0 {
                close(
                    HTTP2Error(.connectFailed, "cannot connect to \(channel.spec.authority): \(Self.errorText(error))"))
                return
            }
            startTLS()
        case .handshaking:
            handshake()
        case .awaitingSettings, .open, .draining:
            if events & (EPOLLIN.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 || readWantsWrite {
                read()
            }
            if state != .closed, events & EPOLLOUT.rawValue != 0 { loop.markDirty(self) }
        case .resolving, .closed:
            break
        }
    }

    // MARK: - TLS

    private func startTLS() {
        guard let ssl = SSL_new(channel.spec.tls.context) else {
            close(HTTP2Error(.tlsFailed, "SSL_new failed"))
            return
        }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        SSL_set_connect_state(ssl)
        let host = channel.spec.host
        if channel.literalAddress == nil {
            _ = bk_ssl_set_sni(ssl, host)
            SSL_set1_host(ssl, host)
        } else {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        }
        state = .handshaking
        handshake()
    }

    private func handshake() {
        guard let ssl else { return }
        let result = SSL_do_handshake(ssl)
        if result != 1 {
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ: loop.setInterest(self, EPOLLIN.rawValue)
            case SSL_ERROR_WANT_WRITE: loop.setInterest(self, EPOLLIN.rawValue | EPOLLOUT.rawValue)
            default:
                close(HTTP2Error(.tlsFailed, "TLS handshake with \(channel.spec.authority) failed: \(tlsErrorText())"))
            }
            return
        }
        var protocolName: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &protocolName, &length)
        guard length == 2, let protocolName, protocolName[0] == UInt8(ascii: "h"), protocolName[1] == UInt8(ascii: "2")
        else {
            close(HTTP2Error(.tlsFailed, "\(channel.spec.authority) did not agree to HTTP/2 (ALPN h2)"))
            return
        }
        startSession()
    }

    private func tlsErrorText() -> String {
        var parts: [String] = []
        if let ssl {
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK, let text = X509_verify_cert_error_string(verify) {
                parts.append("certificate: " + String(cString: text))
            }
        }
        var code = ERR_get_error()
        while code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            code = ERR_get_error()
        }
        if parts.isEmpty { parts.append(errno == 0 ? "the connection closed" : Self.errorText(errno)) }
        return parts.joined(separator: "; ")
    }

    // MARK: - HTTP/2 session

    private func startSession() {
        var session: OpaquePointer?
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_client_new2(&session, loop.callbacks.callbacks, context, loop.callbacks.options) == 0,
            let session
        else {
            close(HTTP2Error(.connectionBroken, "nghttp2_session_client_new2 failed"))
            return
        }
        self.session = session
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20)
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        state = .awaitingSettings
        loop.setInterest(self, EPOLLIN.rawValue)
        loop.markDirty(self)
        // OpenSSL may hold bytes already decrypted with the handshake's last read, which epoll
        // will not report again.
        read()
    }

    /// The server's SETTINGS arrived (nghttp2 applied them): usable, or more streams free.
    func remoteSettingsChanged() {
        if state == .awaitingSettings {
            state = .open
            channel.spec.logger.debug(
                "http2 connection open",
                metadata: [
                    "http2.host": channel.spec.host, "http2.connection": String(id),
                    "http2.max_streams": String(freeStreams)
                ])
        }
        loop.markDirty(channel)
    }

    /// A GOAWAY arrived: no new streams here; those at or below `lastStreamID` finish, nghttp2
    /// closes the others as refused (they go back to the queue).
    func goawayReceived(lastStreamID: Int32, errorCode: UInt32, debugData: String) {
        channel.spec.statistics.goawaysReceived.add(1, ordering: .relaxed)
        channel.spec.logger.info(
            "http2 GOAWAY received",
            metadata: [
                "http2.host": channel.spec.host, "http2.connection": String(id),
                "http2.last_stream": String(lastStreamID),
                "http2.error": String(cString: nghttp2_http2_strerror(errorCode)),
                "http2.debug": debugData
            ])
        if state == .open || state == .awaitingSettings { state = .draining }
        loop.markDirty(channel)
    }

    /// Opens a stream for `context`; false when nghttp2 refused it.
    func submit(_ context: StreamContext) -> Bool {
        guard let session else { return false }
        // The request's fields are read where they lie (a copy of the whole request cost a
        // reference count per field, for every stream).
        let scratch = loop.scratch
        scratch.reset()
        scratch.add(HeaderScratch.method, context.request.method.rawValue, indexed: true)
        scratch.add(HeaderScratch.scheme, HeaderScratch.https, indexed: true)
        scratch.add(HeaderScratch.authority, channel.authority, indexed: true)
        scratch.add(HeaderScratch.path, context.request.path, indexed: false)
        scratch.add(context.request.headers)
        if let field = context.request.uniqueField { scratch.add(field.name, field.value, indexed: false) }
        for field in context.request.uniqueHeaders {
            scratch.add(field.name, field.value, indexed: false)
        }
        scratch.add(context.request.trailingHeaders)
        let user = Unmanaged.passUnretained(context).toOpaque()
        let streamID: Int32 = scratch.withHeaders { headers, count in
            if context.request.body.isEmpty {
                return nghttp2_submit_request(session, nil, headers, count, nil, user)
            }
            var provider = nghttp2_data_provider()
            provider.read_callback = http2ReadRequestBody
            return nghttp2_submit_request(session, nil, headers, count, &provider, user)
        }
        guard streamID > 0 else { return false }
        context.connection = self
        context.streamID = streamID
        openStreams += 1
        streamsSubmitted += 1
        if streamsSubmitted == 1 { context.openedConnection = true }
        HTTP2ClientStatistics.raise(channel.spec.statistics.mostStreamsOnAConnection, to: openStreams)
        loop.markDirty(self)
        return true
    }

    /// The request ended before its stream (a timeout, a shutdown): forget it here and, if the
    /// stream is still open, reset it.
    func detach(_ context: StreamContext) {
        guard let session, context.streamID > 0, state != .closed,
            nghttp2_session_find_stream(session, context.streamID) != nil
        else { return }
        nghttp2_session_set_stream_user_data(session, context.streamID, nil)
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), context.streamID, NGHTTP2_CANCEL.rawValue)
        loop.markDirty(self)
    }

    /// nghttp2 closed a stream (answered, reset, refused).
    func streamClosed(_ streamID: Int32, errorCode: UInt32, context: StreamContext?) {
        openStreams = max(0, openStreams - 1)
        loop.markDirty(channel)
        guard let context, !context.finished else { return }
        context.connection = nil  // the stream is gone: nothing to reset when it finishes
        if context.status > 0, errorCode == NGHTTP2_NO_ERROR.rawValue {
            channel.finish(
                context,
                .success(
                    HTTP2Response(
                        status: context.status, headers: context.headers, body: context.body,
                        openedConnection: context.openedConnection)))
        } else if !context.headersSent || errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            channel.resend(context)
        } else {
            channel.finish(
                context,
                .failure(
                    HTTP2Error(
                        .connectionBroken,
                        "the stream was reset: " + String(cString: nghttp2_http2_strerror(errorCode)))))
        }
    }

    // MARK: - Reading and writing

    private func read() {
        guard let ssl, let session else { return }
        readWantsWrite = false
        let buffer = loop.readBuffer
        while true {
            let count = SSL_read(ssl, buffer, Int32(EventLoopRunner.readBufferSize))
            if count > 0 {
                let consumed = nghttp2_session_mem_recv(session, buffer.assumingMemoryBound(to: UInt8.self), Int(count))
                if consumed < 0 {
                    close(
                        HTTP2Error(
                            .connectionBroken,
                            "HTTP/2 error from \(channel.spec.authority): "
                                + String(cString: nghttp2_strerror(Int32(consumed)))))
                    return
                }
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_WANT_READ { break }
            if error == SSL_ERROR_WANT_WRITE {
                readWantsWrite = true
                loop.setInterest(self, EPOLLIN.rawValue | EPOLLOUT.rawValue)
                break
            }
            let why =
                error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0)
                ? "the server closed the connection" : "the connection broke: \(tlsErrorText())"
            ERR_clear_error()
            close(HTTP2Error(.connectionBroken, why))
            return
        }
        loop.markDirty(self)
        endIfDone()
    }

    /// Writes what nghttp2 has to send, 64 KiB at a time; leaves EPOLLOUT armed only while the
    /// socket cannot take more.
    func flush() {
        guard let ssl, let session, state == .awaitingSettings || state == .open || state == .draining else { return }
        while true {
            while outputOffset < output.count {
                let written = output.withUnsafeBytes { raw in
                    SSL_write(ssl, raw.baseAddress! + outputOffset, Int32(raw.count - outputOffset))
                }
                if written > 0 {
                    outputOffset += Int(written)
                    continue
                }
                let error = SSL_get_error(ssl, written)
                if error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ {
                    loop.setInterest(self, EPOLLIN.rawValue | EPOLLOUT.rawValue)
                    return
                }
                let why = Self.errorText(errno)
                ERR_clear_error()
                closeAfterReadingWhatArrived(
                    HTTP2Error(.connectionBroken, "the connection broke while writing: \(why)"))
                return
            }
            output.removeAll(keepingCapacity: true)
            outputOffset = 0
            while output.count < Self.writeBatch {
                var data: UnsafePointer<UInt8>?
                let count = nghttp2_session_mem_send(session, &data)
                if count < 0 {
                    close(HTTP2Error(.connectionBroken, "nghttp2: " + String(cString: nghttp2_strerror(Int32(count)))))
                    return
                }
                guard count > 0, let data else { break }
                output.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
            }
            if output.isEmpty { break }
        }
        if !readWantsWrite { loop.setInterest(self, EPOLLIN.rawValue) }
        endIfDone()
    }

    /// Closes the connection once nghttp2 has nothing left to read or write (after a GOAWAY and
    /// the last stream).
    private func endIfDone() {
        guard state != .closed, let session else { return }
        if nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0,
            outputOffset >= output.count
        {
            close(nil)
        }
    }

    // MARK: - Closing

    /// A write failed: the server may have said GOAWAY and closed just before, and its last frames
    /// are still readable. Reading them first lets nghttp2 refuse the streams above the GOAWAY's
    /// last stream id (they go back to the queue) instead of ending every written request
    /// `connectionBroken` as if the server might have processed it.
    private func closeAfterReadingWhatArrived(_ error: HTTP2Error) {
        read()  // ends the connection itself at the end of the stream or on a read error
        if state != .closed { close(error) }
    }

    /// Ends the connection. `error` nil: an orderly end (the requests still on it, if any, go
    /// back to the queue or end `connectionBroken`). `goingAway`: say GOAWAY first (best effort).
    func close(_ error: HTTP2Error?, goingAway: Bool = false) {
        guard state != .closed else { return }
        let wasUsable = !isConnecting
        if goingAway, let session {
            nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
            flush()  // may itself end the connection
            guard state != .closed else { return }
        }
        state = .closed
        if let error {
            channel.spec.logger.debug(
                "http2 connection closed",
                metadata: [
                    "http2.host": channel.spec.host, "http2.connection": String(id), "error.code": error.code.rawValue,
                    "error": error.message
                ])
        }
        channel.connectionClosed(self, error: error, wasUsable: wasUsable)
        if let session { nghttp2_session_del(session) }
        session = nil
        if let ssl { SSL_free(ssl) }
        ssl = nil
        ERR_clear_error()
        loop.setInterest(self, 0)
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        loop.unregister(self)
    }

    static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }
}
