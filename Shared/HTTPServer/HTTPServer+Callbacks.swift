import BuzzKitCore
internal import CMicroHTTPD

// C callbacks for libmicrohttpd: non-capturing closures in global constants (a capturing closure
// for a C function pointer crashes the 6.3.1 compiler). Context arrives through the `void *`.

/// MHD_AccessHandlerCallback: `cls` is the unretained `ServerCore`.
let bkAccessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let url, let method, let uploadDataSize, let conCls else { return .NO }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    return core.handle(
        connection: connection, url: url, method: method, uploadData: uploadData,
        uploadDataSize: uploadDataSize, conCls: conCls)
}

/// MHD_RequestCompletedCallback: releases the per-request state (also for aborted requests).
let bkRequestCompleted: MHD_RequestCompletedCallback = { cls, _, conCls, _ in
    guard let cls else { return }
    Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue().completed(conCls: conCls)
}

/// MHD_KeyValueIterator for headers: `cls` points to a `[(name: String, value: String)]`.
let bkCollectHeader: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let fields = cls.assumingMemoryBound(to: [HTTPHeaders.Field].self)
    fields.pointee.append(HTTPHeaders.Field(name: String(cString: key), value: value.map { String(cString: $0) } ?? ""))
    return .YES
}

/// MHD_KeyValueIterator for query arguments: `cls` points to a `[(name: String, value: String?)]`.
let bkCollectArgument: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let arguments = cls.assumingMemoryBound(to: [(name: String, value: String?)].self)
    arguments.pointee.append((name: String(cString: key), value: value.map { String(cString: $0) }))
    return .YES
}
