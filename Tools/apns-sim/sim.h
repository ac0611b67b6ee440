/*
 * apns-sim: a local stand-in for Apple's push service (APNs).
 *
 * Shared declarations. The simulator is split by purpose:
 *   tls.c        OpenSSL context (TLS 1.2+, ALPN "h2" only)
 *   server.c     listeners, one epoll loop per worker thread, delayed-response timers
 *   h2_session.c one HTTP/2 connection: OpenSSL <-> nghttp2 plumbing and stream bookkeeping
 *   validate.c   APNs request rules (path, headers, payload) -> status + reason
 *   jwt.c        provider keys and ES256 provider-token checks (per-connection cache)
 *   state.c      process-wide state shared by workers and the control API: faults, device-token
 *                rules, recordings, statistics
 *   control.c    the control API (plain HTTP/1.1 on --control-port)
 *   json_check.c strict JSON validator plus tiny member lookup (no tree is ever built)
 *   util.c       time, UUIDs, growable buffers
 */
#ifndef APNS_SIM_H
#define APNS_SIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>

/* ---------- util.c ---------- */
int64_t now_ms(void);
/* Writes a random (version 4) UUID, upper-case like APNs, 36 chars + NUL. */
void uuid_v4(char out[37]);
bool is_uuid(const char *s, size_t n);
bool is_hex(const char *s, size_t n);

/* A growable byte buffer; `data` is always NUL-terminated for convenience. */
typedef struct {
    char *data;
    size_t len, cap;
} sbuf;
void sbuf_init(sbuf *b);
void sbuf_free(sbuf *b);
void sbuf_reserve(sbuf *b, size_t extra);
void sbuf_add(sbuf *b, const void *p, size_t n);
void sbuf_adds(sbuf *b, const char *s);
void sbuf_addf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends `p` as a JSON string literal (quotes included). Bytes >= 0x80 pass through unchanged:
   callers only hand in text that is valid UTF-8 (payloads are validated first). */
void sbuf_add_json_str(sbuf *b, const char *p, size_t n);

/* ---------- json_check.c ---------- */
typedef enum { JSON_INVALID = 0, JSON_OBJECT, JSON_OTHER } json_kind;
/* Strict RFC 8259 check of a whole document (UTF-8 included); says whether the top level is an object. */
json_kind json_check(const char *p, size_t n);
/* In a document already known to be a valid object: finds the top-level member `key` and returns the
   span of its raw value text. Keys are compared after unescaping. */
bool json_member(const char *p, size_t n, const char *key, const char **val, size_t *vlen);
/* Decodes a raw JSON string value (with quotes) into `out` (NUL-terminated). False if not a string
   or if it does not fit. */
bool json_string(const char *val, size_t vlen, char *out, size_t cap, size_t *outlen);
/* Parses a raw JSON integer value (no fraction, no exponent). */
bool json_int(const char *val, size_t vlen, long long *out);

/* ---------- reasons (APNs "reason" strings) ---------- */
typedef enum {
    R_NONE = 0,
    R_BadCollapseId, R_BadDeviceToken, R_BadExpirationDate, R_BadMessageId, R_BadPriority, R_BadTopic,
    R_DeviceTokenNotForTopic, R_DuplicateHeaders, R_MissingDeviceToken, R_MissingTopic, R_PayloadEmpty,
    R_BadMessage, R_InvalidPushType, R_ExpiredProviderToken, R_InvalidProviderToken, R_MissingProviderToken,
    R_BadPath, R_MethodNotAllowed, R_Unregistered, R_PayloadTooLarge, R_TooManyProviderTokenUpdates,
    R_TooManyRequests, R_InternalServerError, R_ServiceUnavailable, R_Shutdown, R_Custom,
    R_COUNT
} reason_id;
extern const char *const reason_names[R_COUNT];
reason_id reason_lookup(const char *name);

typedef struct {
    int status;          /* 0 = accepted so far */
    reason_id reason;
    char custom[48];     /* reason text when reason == R_Custom (injected faults) */
    int64_t timestamp;   /* for 410 Unregistered, else 0 */
    int retry_after;     /* seconds for a retry-after field (injected faults), 0 = none */
} verdict;

/* ---------- jwt.c ---------- */
int keys_add_pem(const char *kid, const char *team, const char *pem, size_t len, char *err, size_t errcap);
int keys_add_file(const char *kid, const char *team, const char *path, char *err, size_t errcap);
int keys_load_dir(const char *dir, char *err, size_t errcap);
size_t keys_count(void);
void keys_free_all(void);

#define TOKEN_SLOTS 8
typedef struct {
    char kid[64];
    char *token;          /* the exact token text last accepted for this key on this connection */
    size_t token_len;
    int64_t iat;          /* seconds */
    int64_t first_use_ms; /* when this connection first presented it */
} token_slot;

typedef struct {
    token_slot slots[TOKEN_SLOTS];
    int count;
    unsigned generation; /* compared with state's token generation: /control/reset clears all caches */
    char team[64];       /* the team of the first valid token on this connection */
    bool mixed;          /* a valid token of another team came on the same connection (counted once) */
} token_cache;

void token_cache_clear(token_cache *tc);
/* Checks the `authorization` header value (may be NULL) and updates the cache; sets v on failure. */
void jwt_check(token_cache *tc, const char *auth, size_t len, int64_t now, verdict *v);

/* ---------- validate.c ---------- */
#define MAX_HEADERS 64
typedef struct {
    uint32_t name_off, name_len, value_off, value_len;
} hdr_ref;

typedef struct stream_req stream_req;
struct conn;

/* Everything that validation reads about one request. */
typedef struct {
    const char *method; size_t method_len;
    const char *path; size_t path_len;
    const char *token; size_t token_len;       /* filled by validation */
    const char *apns_id; size_t apns_id_len;
    const char *auth; size_t auth_len;
    const char *topic; size_t topic_len;
    const char *push_type; size_t push_type_len;
    const char *priority; size_t priority_len;
    const char *expiration; size_t expiration_len;
    const char *collapse_id; size_t collapse_id_len;
    bool duplicate;                            /* an apns-* or authorization header came twice */
    const char *body; size_t body_len;         /* the bytes kept (at most the largest limit + 1) */
    size_t body_total;                         /* all bytes received */
    int effective_priority;
} request_view;

void validate_request(request_view *r, token_cache *tc, int64_t now, verdict *v);

/* ---------- state.c ---------- */
typedef struct {
    bool record;
    size_t record_limit;
} state_config;

void state_init(const state_config *cfg);
void state_free(void);
/* Device-token rules set through the control API (410 Unregistered / 400 BadDeviceToken). */
bool state_token_rule(const char *token, size_t len, verdict *v);
void state_set_token_rule(const char *token, size_t len, int status, int64_t timestamp);
bool state_clear_token_rule(const char *token, size_t len);
/* Consumes one injected fault if one is active. */
bool state_take_fault(verdict *v, int64_t now);
void state_set_fault(int status, const char *reason, long long count, long long seconds, int retry_after, int64_t now);
/* Connection faults armed through the control API: after N more requests, the connection that
   gets the Nth sends GOAWAY (CONN_GOAWAY) or is dropped without an answer (CONN_DROP). */
typedef enum { CONN_NONE = 0, CONN_GOAWAY, CONN_DROP } conn_fault;
void state_set_conn_fault(conn_fault kind, long long after);
/* Counts one request against the armed connection fault; returns the fault when this one fires it. */
conn_fault state_take_conn_fault(void);
/* SETTINGS_MAX_CONCURRENT_STREAMS for new connections (and, through the workers, existing ones). */
void state_set_max_streams(unsigned n);
unsigned state_max_streams(void);
/* Milliseconds added to the clock provider tokens are judged by (iat age, renewal interval). */
void state_set_clock_offset(int64_t ms);
int64_t state_clock_offset(void);
/* Streams open at once on one connection: the peak so far. */
void state_note_open_streams(long long n);
/* Consumes one delayed response if a delay is active: returns the delay in ms, 0 otherwise. */
int state_take_delay(void);
void state_set_delay(int ms, long long count);
void state_reset(void);
unsigned state_token_generation(void);
bool state_recording(void);
void state_record(const request_view *r, const char *apns_id, const char *const *hdr_names,
                  const size_t *hdr_name_lens, const char *const *hdr_vals, const size_t *hdr_val_lens,
                  size_t nhdr, int64_t received_at);
void state_pushes_json(sbuf *out, const char *token, size_t token_len, long long limit);
void state_stats_json(sbuf *out);

/* Counters; relaxed atomics: they are only ever read for reporting. */
typedef struct {
    atomic_llong accepted;
    atomic_llong rejected[R_COUNT];
    atomic_llong connections_total;
    atomic_llong connections_current;
    atomic_llong streams;
    atomic_llong recorded_dropped;
    atomic_llong max_open_streams;   /* the most streams open at once on one connection */
    atomic_llong mixed_team_conns;   /* connections that carried valid tokens of two teams */
    atomic_llong goaways_sent;       /* GOAWAY frames sent (control API) */
    atomic_llong conns_dropped;      /* connections dropped by /control/drop */
    atomic_llong refused;            /* streams refused after a GOAWAY (above its last stream id) */
} sim_stats;
extern sim_stats g_stats;

/* ---------- tls.c ---------- */
SSL_CTX *tls_context(const char *cert, const char *key, char *err, size_t errcap);

/* ---------- server.c ---------- */
typedef struct {
    const char *host;
    int port;
    int threads;
} server_config;

/* Binds all listeners (port 0 picks one) and starts the workers. Returns the bound port or -1. */
int server_start(const server_config *cfg, SSL_CTX *ctx, char *err, size_t errcap);
/* Asks every worker to send GOAWAY on all its connections. */
void server_goaway_all(void);
/* Asks every worker to send the current SETTINGS_MAX_CONCURRENT_STREAMS on all its connections. */
void server_settings_all(void);
void server_stop(void);

/* ---------- control.c ---------- */
int control_listen(const char *host, int port, int *bound_port);
/* Serves control requests until `*stop` becomes true (polled with the signal fd). */
void control_serve(int listen_fd, int signal_fd);

#endif
