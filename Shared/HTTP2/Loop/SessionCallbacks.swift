import BuzzKitCore
internal import CNghttp2

/// nghttp2's callbacks and options, made once per loop and shared by its sessions.
///
/// The callbacks are non-capturing closures in global `let`s (a capturing closure converted to a
/// C function pointer crashes the 6.3.1 compiler). Their context arrives as pointers: the session's
/// user data is its unretained `Connection` (alive until it deletes the session), a stream's user
/// data its unretained `StreamContext` (cleared before the request is finished elsewhere, see
/// `Connection.detach`). They run on the loop thread only, inside mem_recv / mem_send.
final class SessionCallbacks {
    let callbacks: OpaquePointer
    let options: OpaquePointer

    init() {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, http2OnHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, http2OnDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, http2OnFrameReceived)
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, http2OnFrameSent)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, http2OnStreamClose)
        self.callbacks = callbacks!
        var options: OpaquePointer?
        nghttp2_option_new(&options)
        // No server push (also refused in our SETTINGS).
        nghttp2_option_set_max_reserved_remote_streams(options, 0)
        self.options = options!
    }

    deinit {
        nghttp2_session_callbacks_del(callbacks)
        nghttp2_option_del(options)
    }
}

private func streamContext(_ session: OpaquePointer?, _ streamID: Int32) -> StreamContext? {
    guard let session, let raw = nghttp2_session_get_stream_user_data(session, streamID) else { return nil }
    return Unmanaged<StreamContext>.fromOpaque(raw).takeUnretainedValue()
}

private func connection(_ userData: UnsafeMutableRawPointer?) -> Connection? {
    guard let userData else { return nil }
    return Unmanaged<Connection>.fromOpaque(userData).takeUnretainedValue()
}

private let statusName: [UInt8] = Array(":status".utf8)

/// A response header field: `:status` parsed, the others kept as text.
let http2OnHeader: nghttp2_on_header_callback = { session, frame, name, nameLength, value, valueLength, _, _ in
    guard let frame, let name, let value, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
        let context = streamContext(session, frame.pointee.hd.stream_id)
    else { return 0 }
    let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
    let valueBytes = UnsafeBufferPointer(start: value, count: valueLength)
    if nameBytes.elementsEqual(statusName) {
        var status = 0
        for byte in valueBytes where byte >= 0x30 && byte <= 0x39 { status = status * 10 + Int(byte - 0x30) }
        if status >= 200 || context.status == 0 { context.status = status }
        if status < 200 { context.headers = HTTPHeaders() }  // an interim response: the final one follows
    } else {
        // Room for APNs's answer fields (apns-id, apns-unique-id) at once, not grown by one.
        if context.headers.isEmpty { context.headers.reserveCapacity(4) }
        context.headers.add(
            name: String(decoding: nameBytes, as: UTF8.self),
            value: context.responseValue(name: nameBytes, value: valueBytes))
    }
    return 0
}

/// Response body bytes, kept up to the client's `maxResponseBody`.
let http2OnDataChunk: nghttp2_on_data_chunk_recv_callback = { session, _, streamID, data, length, userData in
    guard let data, let context = streamContext(session, streamID), let connection = connection(userData) else {
        return 0
    }
    let room = connection.channel.configuration.maxResponseBody - context.body.count
    if room > 0 { context.body.append(contentsOf: UnsafeBufferPointer(start: data, count: min(room, length))) }
    return 0
}

/// SETTINGS (the stream limit) and GOAWAY.
let http2OnFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame, let connection = connection(userData) else { return 0 }
    switch UInt32(frame.pointee.hd.type) {
    case NGHTTP2_SETTINGS.rawValue where frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
        connection.remoteSettingsChanged()
    case NGHTTP2_GOAWAY.rawValue:
        let goaway = frame.pointee.goaway
        var debug = ""
        if let data = goaway.opaque_data, goaway.opaque_data_len > 0 {
            debug = String(
                decoding: UnsafeBufferPointer(start: data, count: min(goaway.opaque_data_len, 256)), as: UTF8.self)
        }
        connection.goawayReceived(lastStreamID: goaway.last_stream_id, errorCode: goaway.error_code, debugData: debug)
    default:
        break
    }
    return 0
}

/// A request's HEADERS went out: from now on the server may act on it.
let http2OnFrameSent: nghttp2_on_frame_send_callback = { session, frame, _ in
    guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
        let context = streamContext(session, frame.pointee.hd.stream_id)
    else { return 0 }
    context.headersSent = true
    return 0
}

let http2OnStreamClose: nghttp2_on_stream_close_callback = { session, streamID, errorCode, userData in
    guard let connection = connection(userData) else { return 0 }
    connection.streamClosed(streamID, errorCode: errorCode, context: streamContext(session, streamID))
    return 0
}

/// Copies the next piece of a request's body into nghttp2's DATA frame.
let http2ReadRequestBody: nghttp2_data_source_read_callback = { session, streamID, buffer, length, flags, _, _ in
    guard let buffer, let flags else { return 0 }
    guard let context = streamContext(session, streamID) else {
        flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
        return 0
    }
    // The body is read where it lies (no copy of the array per DATA frame).
    let offset = context.bodyOffset
    let total = context.request.body.count
    let count = min(length, total - offset)
    if count > 0 {
        context.request.body.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + offset, count: count)
        }
        context.bodyOffset = offset + count
    }
    if context.bodyOffset >= total { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
    return count
}
