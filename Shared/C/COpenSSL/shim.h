#ifndef BK_COPENSSL_SHIM_H
#define BK_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* SHA-256 through the low-level API: OpenSSL 3's one-shot SHA256() fetches the algorithm on every
   call and EVP_Digest allocates a context (430 and 170 ns for an API key on this machine); this
   costs 66 ns. The low-level functions are deprecated in OpenSSL 3 but still shipped by it. */
static inline void bk_sha256(const void *data, size_t length, unsigned char *out) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    SHA256_CTX context;
    SHA256_Init(&context);
    SHA256_Update(&context, data, length);
    SHA256_Final(out, &context);
#pragma GCC diagnostic pop
}

/* BIO_get_mem_data is a macro over BIO_ctrl: Swift cannot call it. */
static inline long bk_bio_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

/* EVP_EC_gen is a variadic macro: generate a P-256 key explicitly. */
static inline EVP_PKEY *bk_generate_p256(void) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, NULL);
    if (ctx == NULL) return NULL;
    if (EVP_PKEY_keygen_init(ctx) <= 0 || EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) <= 0
        || EVP_PKEY_keygen(ctx, &key) <= 0) {
        key = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return key;
}

/* TLS client settings that OpenSSL defines as macros over SSL_CTX_ctrl / SSL_ctrl (Swift cannot
   call those): the HTTP/2 transport's non-blocking connections. */
static inline int bk_ssl_ctx_set_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}
/* Partial writes, and a retried SSL_write may pass a buffer that moved (a Swift array's storage). */
static inline long bk_ssl_ctx_set_write_modes(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
static inline int bk_ssl_set_sni(SSL *ssl, const char *host) { return (int)SSL_set_tlsext_host_name(ssl, host); }
#endif
