internal import CCurl

/// Translates an `HTTPClientRequest` plus the client configuration into easy-handle options.
enum CurlRequestSetup {
    /// `lineBuffer` is scratch space for header lines, owned by the engine thread and reused.
    static func apply(
        _ request: HTTPClientRequest, configuration: HTTPClient.Configuration,
        to transfer: CurlTransfer, lineBuffer: inout [UInt8]
    ) throws {
        let easy = transfer.easy
        let h = easy.handle
        var check = OptionCheck()
        check(bk_curl_easy_setopt_pointer(h, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(easy.errorBuffer)))
        check(bk_curl_easy_setopt_string(h, CURLOPT_URL, request.url))
        check(bk_curl_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1))
        // Only http and https, and redirects are never followed (the caller sees the 3xx).
        check(bk_curl_easy_setopt_string(h, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(bk_curl_easy_setopt_long(h, CURLOPT_FOLLOWLOCATION, 0))
        if !configuration.useEnvironmentProxy { check(bk_curl_easy_setopt_string(h, CURLOPT_PROXY, "")) }
        if let limit = request.maxResponseBodyBytes { transfer.bodyLimit = max(0, limit) }
        if !request.resolve.isEmpty {
            var resolve: UnsafeMutablePointer<curl_slist>?
            for entry in request.resolve { resolve = curl_slist_append(resolve, entry) }
            transfer.resolveList = resolve
            check(bk_curl_easy_setopt_slist(h, CURLOPT_RESOLVE, resolve))
        }
        if !configuration.tcpNoDelay { check(bk_curl_easy_setopt_long(h, CURLOPT_TCP_NODELAY, 0)) }
        // The upload buffer (default 64 kB) is allocated for a transfer that sends a body; at
        // thousands of small POSTs per second, allocating and freeing blocks that large showed up
        // in the allocator's share of the CPU. 16 kB (curl's minimum) holds any APNs payload (4 kB);
        // larger bodies simply go out in more reads.
        check(bk_curl_easy_setopt_long(h, CURLOPT_UPLOAD_BUFFERSIZE, Self.uploadBufferSize))
        switch configuration.httpVersion {
        case .http1_1:
            check(bk_curl_easy_setopt_long(h, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)))
        case .http2:
            check(bk_curl_easy_setopt_long(h, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
            check(bk_curl_easy_setopt_long(h, CURLOPT_PIPEWAIT, 1))
        case .http2PriorKnowledge:
            check(bk_curl_easy_setopt_long(h, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)))
            check(bk_curl_easy_setopt_long(h, CURLOPT_PIPEWAIT, 1))
        }
        if let caFile = configuration.caFile {
            check(bk_curl_easy_setopt_string(h, CURLOPT_CAINFO, caFile))
        }
        let timeout = request.timeout ?? configuration.requestTimeout
        check(bk_curl_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, timeout.curlMilliseconds))
        check(bk_curl_easy_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds))

        let context = Unmanaged.passUnretained(transfer).toOpaque()
        check(bk_curl_easy_setopt_write_function(h, CURLOPT_WRITEFUNCTION, curlBodyCallback))
        check(bk_curl_easy_setopt_pointer(h, CURLOPT_WRITEDATA, context))
        check(bk_curl_easy_setopt_write_function(h, CURLOPT_HEADERFUNCTION, curlHeaderCallback))
        check(bk_curl_easy_setopt_pointer(h, CURLOPT_HEADERDATA, context))

        let method = request.method
        let sendsBody =
            method == .POST || method == .PUT || method == .PATCH
            || (method != .HEAD && !request.body.isEmpty)
        if method == .HEAD {
            check(bk_curl_easy_setopt_long(h, CURLOPT_NOBODY, 1))
        } else if sendsBody {
            // POSTFIELDSIZE first: COPYPOSTFIELDS copies exactly that many bytes (binary safe).
            check(bk_curl_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
            if request.body.isEmpty {
                // curl wants a non-null pointer even for zero bytes.
                var nothing: CChar = 0
                check(bk_curl_easy_setopt_pointer(h, CURLOPT_COPYPOSTFIELDS, &nothing))
            } else {
                request.body.withUnsafeBytes { bytes in
                    check(
                        bk_curl_easy_setopt_pointer(
                            h, CURLOPT_COPYPOSTFIELDS,
                            UnsafeMutableRawPointer(mutating: bytes.baseAddress)))
                }
            }
            if method != .POST {
                check(bk_curl_easy_setopt_string(h, CURLOPT_CUSTOMREQUEST, method.rawValue))
            }
        } else if method == .GET {
            check(bk_curl_easy_setopt_long(h, CURLOPT_HTTPGET, 1))
        } else {
            check(bk_curl_easy_setopt_string(h, CURLOPT_CUSTOMREQUEST, method.rawValue))
        }

        var list: UnsafeMutablePointer<curl_slist>?
        for field in request.headers {
            // "Name;" sends an empty header; "Name:" would remove it. The line is written into a
            // reused buffer (curl_slist_append copies it), not a new String per header.
            lineBuffer.removeAll(keepingCapacity: true)
            lineBuffer.append(contentsOf: field.name.utf8)
            if field.value.isEmpty {
                lineBuffer.append(UInt8(ascii: ";"))
            } else {
                lineBuffer.append(UInt8(ascii: ":"))
                lineBuffer.append(UInt8(ascii: " "))
                lineBuffer.append(contentsOf: field.value.utf8)
            }
            lineBuffer.append(0)
            list = lineBuffer.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { curl_slist_append(list, $0.baseAddress) }
            }
        }
        if !request.headers.contains(name: "expect") { list = curl_slist_append(list, "Expect:") }
        if sendsBody, !request.headers.contains(name: "content-type") {
            list = curl_slist_append(list, "Content-Type:")
        }
        transfer.headerList = list
        check(bk_curl_easy_setopt_slist(h, CURLOPT_HTTPHEADER, list))

        if let failure = check.failure { throw HTTPClientError.fromCurl(failure, detail: nil) }
    }

    static let uploadBufferSize = 16 * 1024

    /// Remembers the first option curl rejected, so setup reads as a flat list of options.
    private struct OptionCheck {
        var failure: CURLcode?

        mutating func callAsFunction(_ result: CURLcode) {
            if result != CURLE_OK, failure == nil { failure = result }
        }
    }
}
