internal import CCurl

// C callbacks for curl. They must be non-capturing closures stored in global `let`s (a capturing
// closure converted to a C function pointer crashes the 6.3.1 compiler); their context arrives as
// an unretained `CurlTransfer` in curl's userdata pointer. They run on the engine thread only,
// inside curl_multi_perform, while the engine's `active` table keeps the transfer alive.

/// CURLOPT_WRITEFUNCTION: appends response body bytes.
let curlBodyCallback: bk_curl_write_callback = { data, size, count, userdata in
    let length = size * count
    guard length > 0, let data, let userdata else { return length }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let room = transfer.bodyLimit - transfer.body.count
    if room > 0 {
        transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: min(length, room)))
    }
    return length
}

/// CURLOPT_HEADERFUNCTION: receives one complete header line at a time (status line included).
let curlHeaderCallback: bk_curl_write_callback = { data, size, count, userdata in
    let length = size * count
    guard length > 0, let data, let userdata else { return length }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
    return length
}
