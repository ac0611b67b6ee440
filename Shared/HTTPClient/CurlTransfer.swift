import BuzzKitCore
internal import CCurl

/// One request in flight: the easy handle it runs on and what has arrived so far.
///
/// Confined to the engine thread from creation to completion; the completion is finished exactly
/// once, by whoever removes the transfer from the engine's `active` table.
final class CurlTransfer {
    let id: UInt64
    let easy: CurlEasyHandle
    let completion: CurlCompletion
    /// The request header list handed to curl; freed when the transfer ends.
    var headerList: UnsafeMutablePointer<curl_slist>?
    /// CURLOPT_RESOLVE's list (the request's pinned addresses); freed when the transfer ends.
    var resolveList: UnsafeMutablePointer<curl_slist>?
    var body: [UInt8] = []
    /// `HTTPClientRequest.maxResponseBodyBytes`: body bytes past it are dropped.
    var bodyLimit = Int.max
    var headers = HTTPHeaders()

    init(id: UInt64, easy: CurlEasyHandle, completion: CurlCompletion) {
        self.id = id
        self.easy = easy
        self.completion = completion
    }

    /// Parses `Name: value\r\n`; a status line (`HTTP/...`) starts a new response, so headers of
    /// an interim `100 Continue` (or of a redirect) are dropped.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        guard end > 0 else { return }
        let bytes = UnsafeRawBufferPointer(rebasing: line[0..<end])
        if end >= 5, bytes[0] == 0x48, bytes[1] == 0x54, bytes[2] == 0x54, bytes[3] == 0x50, bytes[4] == 0x2F {
            headers = HTTPHeaders()
            return
        }
        guard let colon = bytes.firstIndex(of: 0x3A) else { return }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<colon]), as: UTF8.self)
        var start = colon + 1
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        var stop = end
        while stop > start, bytes[stop - 1] == 0x20 || bytes[stop - 1] == 0x09 { stop -= 1 }
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<stop]), as: UTF8.self)
        headers.add(name: name, value: value)
    }
}

/// A curl easy handle plus its error buffer, pooled and reused across requests (connections live
/// in the multi handle's cache, not here, so reuse only saves allocation and setup).
final class CurlEasyHandle {
    let handle: UnsafeMutableRawPointer
    /// CURLOPT_ERRORBUFFER: curl writes a detailed message here when a transfer fails.
    let errorBuffer: UnsafeMutablePointer<CChar>

    init?() {
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    var errorMessage: String? {
        errorBuffer[0] == 0 ? nil : String(cString: errorBuffer)
    }

    /// Clears every option so the handle can carry another request.
    func reset() {
        curl_easy_reset(handle)
        errorBuffer[0] = 0
    }

    func destroy() {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }
}
