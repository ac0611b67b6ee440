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
#endif
