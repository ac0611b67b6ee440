/*
 * Provider keys and ES256 provider tokens, checked the way APNs documents them:
 * header {alg: ES256, kid}, claims {iss: team id, iat}, signature raw r||s (64 bytes).
 *
 * Tokens are cached per connection and per key id (APNs ties token state to the connection), so
 * the signature is verified once per new token, not per request. The registry is read-mostly:
 * a rwlock, and a reference on the key for the short time a verification runs, so that a key
 * replaced through the control API is never freed under a worker.
 */
#include "sim.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#define TOKEN_MAX_AGE_S 3600          /* APNs: a token older than one hour is expired */
#define TOKEN_FUTURE_SKEW_S 300       /* leniency for clocks running ahead of ours */
#define TOKEN_UPDATE_MIN_MS (20 * 60 * 1000) /* APNs: update the token no more than every 20 min */

typedef struct {
    char kid[64];
    char team[64];
    EVP_PKEY *pkey;
} provider_key;

static pthread_rwlock_t keys_lock = PTHREAD_RWLOCK_INITIALIZER;
static provider_key *keys;
static size_t nkeys, capkeys;

static void set_err(char *err, size_t cap, const char *msg) {
    if (err && cap) snprintf(err, cap, "%s", msg);
}

/* Accepts a public key or a private key (e.g. Apple's .p8); only P-256 EC keys fit ES256. */
static EVP_PKEY *load_key(const char *pem, size_t len, char *err, size_t errcap) {
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio) return NULL;
    EVP_PKEY *pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    if (!pkey) {
        ERR_clear_error();
        (void)BIO_reset(bio);
        pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    }
    BIO_free(bio);
    ERR_clear_error();
    if (!pkey) {
        set_err(err, errcap, "not a PEM public or private key");
        return NULL;
    }
    if (!EVP_PKEY_is_a(pkey, "EC") || EVP_PKEY_get_bits(pkey) != 256) {
        EVP_PKEY_free(pkey);
        set_err(err, errcap, "key is not a P-256 EC key (ES256)");
        return NULL;
    }
    return pkey;
}

int keys_add_pem(const char *kid, const char *team, const char *pem, size_t len, char *err, size_t errcap) {
    if (!kid[0] || strlen(kid) >= sizeof keys[0].kid || !team[0] || strlen(team) >= sizeof keys[0].team) {
        set_err(err, errcap, "kid and team must be 1-63 characters");
        return -1;
    }
    EVP_PKEY *pkey = load_key(pem, len, err, errcap);
    if (!pkey) return -1;
    pthread_rwlock_wrlock(&keys_lock);
    provider_key *slot = NULL;
    for (size_t i = 0; i < nkeys; i++)
        if (strcmp(keys[i].kid, kid) == 0) slot = &keys[i];
    if (slot) {
        EVP_PKEY_free(slot->pkey);
    } else {
        if (nkeys == capkeys) {
            size_t cap = capkeys ? capkeys * 2 : 16;
            provider_key *k = realloc(keys, cap * sizeof *k);
            if (!k) {
                pthread_rwlock_unlock(&keys_lock);
                EVP_PKEY_free(pkey);
                set_err(err, errcap, "out of memory");
                return -1;
            }
            keys = k;
            capkeys = cap;
        }
        slot = &keys[nkeys++];
        snprintf(slot->kid, sizeof slot->kid, "%s", kid);
    }
    snprintf(slot->team, sizeof slot->team, "%s", team);
    slot->pkey = pkey;
    pthread_rwlock_unlock(&keys_lock);
    return 0;
}

int keys_add_file(const char *kid, const char *team, const char *path, char *err, size_t errcap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err) snprintf(err, errcap, "cannot open %s", path);
        return -1;
    }
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return keys_add_pem(kid, team, buf, n, err, errcap);
}

/* Files named <KEYID>.<TEAMID>.pem (public or private PEM). Other files are ignored. */
int keys_load_dir(const char *dir, char *err, size_t errcap) {
    DIR *d = opendir(dir);
    if (!d) {
        if (err) snprintf(err, errcap, "cannot open directory %s", dir);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".pem") != 0) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 4), e->d_name);
        char *dot = strchr(name, '.');
        if (!dot) continue;
        *dot = '\0';
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (keys_add_file(name, dot + 1, path, err, errcap) != 0) { rc = -1; break; }
    }
    closedir(d);
    return rc;
}

size_t keys_count(void) {
    pthread_rwlock_rdlock(&keys_lock);
    size_t n = nkeys;
    pthread_rwlock_unlock(&keys_lock);
    return n;
}

void keys_free_all(void) {
    pthread_rwlock_wrlock(&keys_lock);
    for (size_t i = 0; i < nkeys; i++) EVP_PKEY_free(keys[i].pkey);
    free(keys);
    keys = NULL;
    nkeys = capkeys = 0;
    pthread_rwlock_unlock(&keys_lock);
}

/* Returns a referenced key (caller frees) and copies the team id, or NULL. */
static EVP_PKEY *key_lookup(const char *kid, char team[64]) {
    EVP_PKEY *pkey = NULL;
    pthread_rwlock_rdlock(&keys_lock);
    for (size_t i = 0; i < nkeys; i++) {
        if (strcmp(keys[i].kid, kid) == 0) {
            pkey = keys[i].pkey;
            EVP_PKEY_up_ref(pkey);
            memcpy(team, keys[i].team, 64);
            break;
        }
    }
    pthread_rwlock_unlock(&keys_lock);
    return pkey;
}

static int b64url_val(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

/* Unpadded base64url (RFC 7515); returns the decoded length or -1. */
static long b64url_decode(const char *in, size_t n, unsigned char *out, size_t cap) {
    if (n % 4 == 1) return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64url_val((unsigned char)in[i]);
        if (v < 0) return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap) return -1;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    return (long)o;
}

static bool verify_es256(EVP_PKEY *pkey, const char *msg, size_t msglen, const unsigned char sig[64]) {
    bool ok = false;
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
    unsigned char *der = NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!es || !r || !s || !md) goto out;
    if (!ECDSA_SIG_set0(es, r, s)) goto out;
    r = s = NULL; /* owned by es now */
    int derlen = i2d_ECDSA_SIG(es, &der);
    if (derlen <= 0) goto out;
    if (EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pkey) != 1) goto out;
    ok = EVP_DigestVerify(md, der, (size_t)derlen, (const unsigned char *)msg, msglen) == 1;
out:
    ERR_clear_error();
    EVP_MD_CTX_free(md);
    OPENSSL_free(der);
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    return ok;
}

void token_cache_clear(token_cache *tc) {
    for (int i = 0; i < tc->count; i++) free(tc->slots[i].token);
    tc->count = 0;
    tc->team[0] = '\0';
    tc->mixed = false;
}

static void reject(verdict *v, int status, reason_id r) {
    v->status = status;
    v->reason = r;
}

void jwt_check(token_cache *tc, const char *auth, size_t len, int64_t now, verdict *v) {
    unsigned gen = state_token_generation();
    if (tc->generation != gen) {
        token_cache_clear(tc);
        tc->generation = gen;
    }
    if (!auth) { reject(v, 403, R_MissingProviderToken); return; }
    if (len < 7 || strncasecmp(auth, "bearer ", 7) != 0) { reject(v, 403, R_InvalidProviderToken); return; }
    const char *tok = auth + 7;
    size_t tlen = len - 7;
    while (tlen && *tok == ' ') { tok++; tlen--; }
    while (tlen && tok[tlen - 1] == ' ') tlen--;
    if (tlen == 0) { reject(v, 403, R_MissingProviderToken); return; }
    int64_t now_s = now / 1000;

    /* Fast path: the token this connection already presented. */
    for (int i = 0; i < tc->count; i++) {
        token_slot *s = &tc->slots[i];
        if (s->token_len == tlen && memcmp(s->token, tok, tlen) == 0) {
            if (now_s - s->iat > TOKEN_MAX_AGE_S) { reject(v, 403, R_ExpiredProviderToken); return; }
            return;
        }
    }

    if (tlen > 4096) { reject(v, 403, R_InvalidProviderToken); return; }
    const char *d1 = memchr(tok, '.', tlen);
    const char *d2 = d1 ? memchr(d1 + 1, '.', tlen - (size_t)(d1 + 1 - tok)) : NULL;
    if (!d1 || !d2) { reject(v, 403, R_InvalidProviderToken); return; }
    char header[1024], claims[2048];
    unsigned char sig[80];
    long hl = b64url_decode(tok, (size_t)(d1 - tok), (unsigned char *)header, sizeof header);
    long cl = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), (unsigned char *)claims, sizeof claims);
    long sl = b64url_decode(d2 + 1, tlen - (size_t)(d2 + 1 - tok), sig, sizeof sig);
    if (hl <= 0 || cl <= 0 || sl != 64) { reject(v, 403, R_InvalidProviderToken); return; }
    if (json_check(header, (size_t)hl) != JSON_OBJECT || json_check(claims, (size_t)cl) != JSON_OBJECT)
        { reject(v, 403, R_InvalidProviderToken); return; }

    const char *val;
    size_t vlen;
    char alg[16], kid[64], iss[64];
    long long iat;
    if (!json_member(header, (size_t)hl, "alg", &val, &vlen) || !json_string(val, vlen, alg, sizeof alg, NULL) ||
        strcmp(alg, "ES256") != 0)
        { reject(v, 403, R_InvalidProviderToken); return; }
    if (!json_member(header, (size_t)hl, "kid", &val, &vlen) || !json_string(val, vlen, kid, sizeof kid, NULL))
        { reject(v, 403, R_InvalidProviderToken); return; }
    if (!json_member(claims, (size_t)cl, "iss", &val, &vlen) || !json_string(val, vlen, iss, sizeof iss, NULL))
        { reject(v, 403, R_InvalidProviderToken); return; }
    if (!json_member(claims, (size_t)cl, "iat", &val, &vlen) || !json_int(val, vlen, &iat))
        { reject(v, 403, R_InvalidProviderToken); return; }

    char team[64];
    EVP_PKEY *pkey = key_lookup(kid, team);
    if (!pkey) { reject(v, 403, R_InvalidProviderToken); return; }
    bool good = verify_es256(pkey, tok, (size_t)(d2 - tok), sig);
    EVP_PKEY_free(pkey);
    if (!good || strcmp(iss, team) != 0) { reject(v, 403, R_InvalidProviderToken); return; }
    /* APNs keeps a connection to one team's tokens; the simulator counts connections that mix
       two (GET /control/stats: connections.mixedTeams) so a client's separation can be checked. */
    if (!tc->team[0]) {
        snprintf(tc->team, sizeof tc->team, "%s", team);
    } else if (!tc->mixed && strcmp(tc->team, team) != 0) {
        tc->mixed = true;
        atomic_fetch_add(&g_stats.mixed_team_conns, 1);
    }
    if (iat > now_s + TOKEN_FUTURE_SKEW_S) { reject(v, 403, R_InvalidProviderToken); return; }
    if (now_s - iat > TOKEN_MAX_AGE_S) { reject(v, 403, R_ExpiredProviderToken); return; }

    /* A valid new token. Replacing a live token for the same key within 20 minutes of its first
       use is what APNs calls TooManyProviderTokenUpdates; the old token stays in force. */
    token_slot *slot = NULL;
    for (int i = 0; i < tc->count; i++)
        if (strcmp(tc->slots[i].kid, kid) == 0) slot = &tc->slots[i];
    if (slot && now - slot->first_use_ms < TOKEN_UPDATE_MIN_MS && now_s - slot->iat <= TOKEN_MAX_AGE_S)
        { reject(v, 429, R_TooManyProviderTokenUpdates); return; }
    if (!slot) {
        if (tc->count == TOKEN_SLOTS) {
            /* Many keys on one connection: forget the oldest. */
            free(tc->slots[0].token);
            memmove(&tc->slots[0], &tc->slots[1], (TOKEN_SLOTS - 1) * sizeof tc->slots[0]);
            tc->count--;
        }
        slot = &tc->slots[tc->count++];
        memset(slot, 0, sizeof *slot);
        snprintf(slot->kid, sizeof slot->kid, "%s", kid);
    }
    char *copy = malloc(tlen);
    if (!copy) { reject(v, 500, R_InternalServerError); return; }
    memcpy(copy, tok, tlen);
    free(slot->token);
    slot->token = copy;
    slot->token_len = tlen;
    slot->iat = iat;
    slot->first_use_ms = now;
}
