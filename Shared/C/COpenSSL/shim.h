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
