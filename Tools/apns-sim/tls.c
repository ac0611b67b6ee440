/* TLS for the push port: TLS 1.2 or newer, and ALPN must select "h2" (APNs speaks HTTP/2 only). */
#include "sim.h"

#include <stdio.h>
#include <string.h>
#include <openssl/err.h>

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
    (void)ssl;
    (void)arg;
    for (unsigned int i = 0; i < inlen;) {
        unsigned int n = in[i];
        if (i + 1 + n > inlen) break;
        if (n == 2 && memcmp(in + i + 1, "h2", 2) == 0) {
            *out = in + i + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    /* No h2 offered: refuse the handshake rather than fall back to HTTP/1.1. */
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

SSL_CTX *tls_context(const char *cert, const char *key, char *err, size_t errcap) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        snprintf(err, errcap, "SSL_CTX_new failed");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* Non-blocking writes may be retried with a buffer that has moved or grown. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Read ahead: one read(2) takes every record the socket holds instead of two reads per record
       (header, then body). libcurl 7.88 writes each HTTP/2 frame as its own TLS record, so a
       chunk of pushes arrives as hundreds of small records. conn_read drains OpenSSL's buffer
       until WANT_READ, so nothing read ahead is left unprocessed. */
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_default_read_buffer_len(ctx, 64 * 1024);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(err, errcap, "cannot load certificate %s: %s", cert, ERR_reason_error_string(ERR_get_error()));
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errcap, "cannot load private key %s: %s", key, ERR_reason_error_string(ERR_get_error()));
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, NULL);
    return ctx;
}
