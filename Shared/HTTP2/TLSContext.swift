internal import COpenSSL

/// One OpenSSL client context per client: TLS 1.2 or later, peer verification against `caFile`
/// (or the system store), ALPN offering only `h2`.
///
/// `@unchecked Sendable` around the C handle: the SSL_CTX is fully configured here, before the
/// value is shared, and never changed afterwards; OpenSSL documents SSL_new on a configured
/// context as safe from any thread. Freed once, when the last reference goes.
final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer

    init(caFile: String?) throws(HTTP2Error) {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw HTTP2Error(.tlsFailed, "SSL_CTX_new failed")
        }
        self.context = context
        _ = bk_ssl_ctx_set_min_tls12(context)
        _ = bk_ssl_ctx_set_write_modes(context)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        let loaded: Int32
        if let caFile {
            loaded = SSL_CTX_load_verify_locations(context, caFile, nil)
        } else {
            loaded = SSL_CTX_set_default_verify_paths(context)
        }
        guard loaded == 1 else {
            ERR_clear_error()
            throw HTTP2Error(.tlsFailed, "cannot load the CA certificates from \(caFile ?? "the system store")")
        }
        // ALPN wire format: one length-prefixed protocol name.
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        _ = SSL_CTX_set_alpn_protos(context, alpn, UInt32(alpn.count))
    }

    deinit { SSL_CTX_free(context) }
}
