internal import CCurl

extension HTTPClientError {
    /// Classifies a CURLcode into a stable `Code`.
    static func classify(_ result: CURLcode) -> Code {
        switch result {
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .connectFailed
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT, CURLE_USE_SSL_FAILED:
            return .tlsFailed
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_GOT_NOTHING,
            CURLE_PARTIAL_FILE, CURLE_WEIRD_SERVER_REPLY:
            return .connectionBroken
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_BAD_FUNCTION_ARGUMENT, CURLE_UNKNOWN_OPTION,
            CURLE_NOT_BUILT_IN:
            return .invalidRequest
        case CURLE_ABORTED_BY_CALLBACK:
            return .cancelled
        default:
            return .other
        }
    }

    /// Builds the error for a failed transfer; `detail` is the easy handle's error buffer, if any.
    static func fromCurl(_ result: CURLcode, detail: String?) -> HTTPClientError {
        let text: String
        if let detail, !detail.isEmpty {
            text = detail
        } else if let cString = curl_easy_strerror(result) {
            text = String(cString: cString)
        } else {
            text = "curl error \(result.rawValue)"
        }
        return HTTPClientError(code: classify(result), message: text, curlCode: Int(result.rawValue))
    }
}
