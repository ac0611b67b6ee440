/*
 * Process-wide state shared by the worker threads and the control API: device-token rules,
 * injected faults and delays, recordings and counters.
 *
 * The hot path must not contend on a lock when nothing is configured (the benchmark case), so
 * each feature has an atomic "active" flag checked first; the mutex is only taken when the
 * control API has switched something on.
 */
#include "sim.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const reason_names[R_COUNT] = {
    [R_NONE] = "",
    [R_BadCollapseId] = "BadCollapseId", [R_BadDeviceToken] = "BadDeviceToken",
    [R_BadExpirationDate] = "BadExpirationDate", [R_BadMessageId] = "BadMessageId",
    [R_BadPriority] = "BadPriority", [R_BadTopic] = "BadTopic",
    [R_DeviceTokenNotForTopic] = "DeviceTokenNotForTopic", [R_DuplicateHeaders] = "DuplicateHeaders",
    [R_MissingDeviceToken] = "MissingDeviceToken", [R_MissingTopic] = "MissingTopic",
    [R_PayloadEmpty] = "PayloadEmpty", [R_BadMessage] = "BadMessage",
    [R_InvalidPushType] = "InvalidPushType", [R_ExpiredProviderToken] = "ExpiredProviderToken",
    [R_InvalidProviderToken] = "InvalidProviderToken", [R_MissingProviderToken] = "MissingProviderToken",
    [R_BadPath] = "BadPath", [R_MethodNotAllowed] = "MethodNotAllowed", [R_Unregistered] = "Unregistered",
    [R_PayloadTooLarge] = "PayloadTooLarge", [R_TooManyProviderTokenUpdates] = "TooManyProviderTokenUpdates",
    [R_TooManyRequests] = "TooManyRequests", [R_InternalServerError] = "InternalServerError",
    [R_ServiceUnavailable] = "ServiceUnavailable", [R_Shutdown] = "Shutdown", [R_Custom] = "Custom",
};

reason_id reason_lookup(const char *name) {
    for (int i = 1; i < R_Custom; i++)
        if (strcmp(reason_names[i], name) == 0) return (reason_id)i;
    return R_Custom;
}

sim_stats g_stats;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static state_config config;
static atomic_uint token_generation;

/* ---- device-token rules: a chained hash table keyed by the lower-cased token ---- */
#define RULE_BUCKETS 4096
typedef struct rule {
    struct rule *next;
    int status; /* 410 or 400 */
    int64_t timestamp;
    size_t len;
    char token[];
} rule;
static rule *rules[RULE_BUCKETS];
static atomic_int rules_count;

static uint32_t hash_token(const char *t, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        h = (h ^ (uint8_t)c) * 16777619u;
    }
    return h % RULE_BUCKETS;
}

static bool token_eq(const char *a, const char *b, size_t n) {
    return strncasecmp(a, b, n) == 0;
}

static rule **find_rule(const char *t, size_t n) {
    rule **pp = &rules[hash_token(t, n)];
    while (*pp && !((*pp)->len == n && token_eq((*pp)->token, t, n))) pp = &(*pp)->next;
    return pp;
}

bool state_token_rule(const char *token, size_t len, verdict *v) {
    if (atomic_load_explicit(&rules_count, memory_order_relaxed) == 0) return false;
    pthread_mutex_lock(&lock);
    rule *r = *find_rule(token, len);
    if (r) {
        v->status = r->status;
        v->reason = r->status == 410 ? R_Unregistered : R_BadDeviceToken;
        v->timestamp = r->timestamp;
    }
    pthread_mutex_unlock(&lock);
    return r != NULL;
}

void state_set_token_rule(const char *token, size_t len, int status, int64_t timestamp) {
    pthread_mutex_lock(&lock);
    rule **pp = find_rule(token, len);
    if (!*pp) {
        rule *r = malloc(sizeof *r + len + 1);
        if (r) {
            memcpy(r->token, token, len);
            r->token[len] = '\0';
            r->len = len;
            r->next = NULL;
            *pp = r;
            atomic_fetch_add(&rules_count, 1);
        }
    }
    if (*pp) {
        (*pp)->status = status;
        (*pp)->timestamp = timestamp;
    }
    pthread_mutex_unlock(&lock);
}

bool state_clear_token_rule(const char *token, size_t len) {
    pthread_mutex_lock(&lock);
    rule **pp = find_rule(token, len);
    rule *r = *pp;
    if (r) {
        *pp = r->next;
        free(r);
        atomic_fetch_sub(&rules_count, 1);
    }
    pthread_mutex_unlock(&lock);
    return r != NULL;
}

static void clear_rules(void) {
    for (int i = 0; i < RULE_BUCKETS; i++) {
        rule *r = rules[i];
        while (r) {
            rule *n = r->next;
            free(r);
            r = n;
        }
        rules[i] = NULL;
    }
    atomic_store(&rules_count, 0);
}

/* ---- injected faults and delays ---- */
static atomic_bool fault_active, delay_active;
static struct {
    int status;
    reason_id reason;
    char custom[48];
    long long remaining; /* -1: time-bound only */
    int64_t until_ms;    /* 0: count-bound only */
    int retry_after;     /* seconds, 0: no retry-after field */
} fault;
static struct {
    int ms;
    long long remaining; /* -1: until cleared */
} delay;

void state_set_fault(int status, const char *reason, long long count, long long seconds, int retry_after, int64_t now) {
    pthread_mutex_lock(&lock);
    fault.status = status;
    fault.retry_after = retry_after;
    fault.reason = reason_lookup(reason);
    snprintf(fault.custom, sizeof fault.custom, "%s", reason);
    fault.remaining = seconds > 0 ? -1 : count;
    fault.until_ms = seconds > 0 ? now + seconds * 1000 : 0;
    atomic_store(&fault_active, status != 0 && (count > 0 || seconds > 0));
    pthread_mutex_unlock(&lock);
}

bool state_take_fault(verdict *v, int64_t now) {
    if (!atomic_load_explicit(&fault_active, memory_order_relaxed)) return false;
    bool hit = false;
    pthread_mutex_lock(&lock);
    if (fault.until_ms) {
        hit = now < fault.until_ms;
        if (!hit) atomic_store(&fault_active, false);
    } else if (fault.remaining > 0) {
        hit = true;
        if (--fault.remaining == 0) atomic_store(&fault_active, false);
    }
    if (hit) {
        v->status = fault.status;
        v->reason = fault.reason;
        v->retry_after = fault.retry_after;
        memcpy(v->custom, fault.custom, sizeof v->custom);
    }
    pthread_mutex_unlock(&lock);
    return hit;
}

void state_set_delay(int ms, long long count) {
    pthread_mutex_lock(&lock);
    delay.ms = ms;
    delay.remaining = count > 0 ? count : -1;
    atomic_store(&delay_active, ms > 0);
    pthread_mutex_unlock(&lock);
}

int state_take_delay(void) {
    if (!atomic_load_explicit(&delay_active, memory_order_relaxed)) return 0;
    int ms = 0;
    pthread_mutex_lock(&lock);
    if (delay.ms > 0 && delay.remaining != 0) {
        ms = delay.ms;
        if (delay.remaining > 0 && --delay.remaining == 0) atomic_store(&delay_active, false);
    }
    pthread_mutex_unlock(&lock);
    return ms;
}

/* ---- connection faults, stream limit, token clock ---- */
static atomic_int conn_fault_kind;
static atomic_llong conn_fault_countdown;
static atomic_uint max_streams = 1000; /* what APNs advertises once a connection is established */
static atomic_llong clock_offset_ms;

void state_set_conn_fault(conn_fault kind, long long after) {
    atomic_store(&conn_fault_countdown, after < 1 ? 1 : after);
    atomic_store(&conn_fault_kind, (int)kind);
}

conn_fault state_take_conn_fault(void) {
    int kind = atomic_load_explicit(&conn_fault_kind, memory_order_relaxed);
    if (kind == CONN_NONE) return CONN_NONE;
    if (atomic_fetch_sub(&conn_fault_countdown, 1) != 1) return CONN_NONE;
    /* This request is the Nth: fire once. */
    int expected = kind;
    return atomic_compare_exchange_strong(&conn_fault_kind, &expected, CONN_NONE) ? (conn_fault)kind : CONN_NONE;
}

void state_set_max_streams(unsigned n) { atomic_store(&max_streams, n); }
unsigned state_max_streams(void) { return atomic_load_explicit(&max_streams, memory_order_relaxed); }
void state_set_clock_offset(int64_t ms) { atomic_store(&clock_offset_ms, ms); }
int64_t state_clock_offset(void) { return atomic_load_explicit(&clock_offset_ms, memory_order_relaxed); }

void state_note_open_streams(long long n) {
    long long seen = atomic_load_explicit(&g_stats.max_open_streams, memory_order_relaxed);
    while (n > seen && !atomic_compare_exchange_weak(&g_stats.max_open_streams, &seen, n)) {}
}

unsigned state_token_generation(void) {
    return atomic_load_explicit(&token_generation, memory_order_relaxed);
}

/* ---- recordings: each accepted push as a ready-made JSON object ---- */
typedef struct {
    char *token; /* lower-cased, for filtering */
    char *json;
    size_t json_len;
} record;
static record *records;
static size_t nrecords, caprecords;

bool state_recording(void) { return config.record; }

static void clear_records(void) {
    for (size_t i = 0; i < nrecords; i++) {
        free(records[i].token);
        free(records[i].json);
    }
    free(records);
    records = NULL;
    nrecords = caprecords = 0;
}

static void add_opt_str(sbuf *b, const char *key, const char *v, size_t n) {
    sbuf_addf(b, ",\"%s\":", key);
    if (v) sbuf_add_json_str(b, v, n);
    else sbuf_adds(b, "null");
}

void state_record(const request_view *r, const char *apns_id, const char *const *hdr_names,
                  const size_t *hdr_name_lens, const char *const *hdr_vals, const size_t *hdr_val_lens,
                  size_t nhdr, int64_t received_at) {
    if (!config.record) return;
    sbuf b;
    sbuf_init(&b);
    sbuf_adds(&b, "{\"token\":");
    sbuf_add_json_str(&b, r->token, r->token_len);
    sbuf_adds(&b, ",\"apnsId\":");
    sbuf_add_json_str(&b, apns_id, strlen(apns_id));
    add_opt_str(&b, "topic", r->topic, r->topic_len);
    sbuf_adds(&b, ",\"pushType\":");
    if (r->push_type) sbuf_add_json_str(&b, r->push_type, r->push_type_len);
    else sbuf_adds(&b, "\"alert\"");
    sbuf_addf(&b, ",\"priority\":%d,\"expiration\":", r->effective_priority);
    if (r->expiration) sbuf_add(&b, r->expiration, r->expiration_len); /* digits only: validated */
    else sbuf_adds(&b, "null");
    add_opt_str(&b, "collapseId", r->collapse_id, r->collapse_id_len);
    sbuf_adds(&b, ",\"headers\":{");
    for (size_t i = 0; i < nhdr; i++) {
        if (i) sbuf_add(&b, ",", 1);
        sbuf_add_json_str(&b, hdr_names[i], hdr_name_lens[i]);
        sbuf_add(&b, ":", 1);
        sbuf_add_json_str(&b, hdr_vals[i], hdr_val_lens[i]);
    }
    sbuf_adds(&b, "},\"payload\":");
    sbuf_add_json_str(&b, r->body, r->body_len);
    sbuf_addf(&b, ",\"receivedAt\":%lld}", (long long)received_at);

    char *token = malloc(r->token_len + 1);
    if (!token) { sbuf_free(&b); return; }
    for (size_t i = 0; i < r->token_len; i++) {
        char c = r->token[i];
        token[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    token[r->token_len] = '\0';

    pthread_mutex_lock(&lock);
    bool stored = false;
    if (nrecords < config.record_limit) {
        if (nrecords == caprecords) {
            size_t cap = caprecords ? caprecords * 2 : 1024;
            record *n = realloc(records, cap * sizeof *n);
            if (n) { records = n; caprecords = cap; }
        }
        if (nrecords < caprecords) {
            records[nrecords++] = (record){token, b.data, b.len};
            stored = true;
        }
    }
    pthread_mutex_unlock(&lock);
    if (!stored) {
        atomic_fetch_add_explicit(&g_stats.recorded_dropped, 1, memory_order_relaxed);
        free(token);
        sbuf_free(&b);
    }
}

/* The most recent `limit` pushes (for `token` if given), oldest first. */
void state_pushes_json(sbuf *out, const char *token, size_t token_len, long long limit) {
    pthread_mutex_lock(&lock);
    size_t start = nrecords;
    long long found = 0;
    while (start > 0 && found < limit) {
        record *rec = &records[start - 1];
        if (!token || (strlen(rec->token) == token_len && token_eq(rec->token, token, token_len))) found++;
        start--;
    }
    sbuf_add(out, "[", 1);
    bool first = true;
    for (size_t i = start; i < nrecords; i++) {
        record *rec = &records[i];
        if (token && !(strlen(rec->token) == token_len && token_eq(rec->token, token, token_len))) continue;
        if (!first) sbuf_add(out, ",", 1);
        first = false;
        sbuf_add(out, rec->json, rec->json_len);
    }
    sbuf_add(out, "]", 1);
    pthread_mutex_unlock(&lock);
}

void state_stats_json(sbuf *out) {
    sbuf_addf(out, "{\"accepted\":%lld,\"rejected\":{",
              atomic_load_explicit(&g_stats.accepted, memory_order_relaxed));
    bool first = true;
    long long total = 0;
    for (int i = 1; i < R_COUNT; i++) {
        long long n = atomic_load_explicit(&g_stats.rejected[i], memory_order_relaxed);
        if (!n) continue;
        total += n;
        sbuf_addf(out, "%s\"%s\":%lld", first ? "" : ",", reason_names[i], n);
        first = false;
    }
    pthread_mutex_lock(&lock);
    size_t recorded = nrecords;
    pthread_mutex_unlock(&lock);
    sbuf_addf(out,
              "},\"rejectedTotal\":%lld,\"connections\":{\"current\":%lld,\"total\":%lld,\"mixedTeams\":%lld,"
              "\"dropped\":%lld},\"streams\":%lld,\"maxOpenStreams\":%lld,\"goawaysSent\":%lld,\"refused\":%lld,"
              "\"maxConcurrentStreams\":%u,\"clockOffsetMs\":%lld,"
              "\"recorded\":%zu,\"recordDropped\":%lld,\"recording\":%s,\"keys\":%zu}",
              total, atomic_load(&g_stats.connections_current), atomic_load(&g_stats.connections_total),
              atomic_load(&g_stats.mixed_team_conns), atomic_load(&g_stats.conns_dropped),
              atomic_load(&g_stats.streams), atomic_load(&g_stats.max_open_streams),
              atomic_load(&g_stats.goaways_sent), atomic_load(&g_stats.refused), state_max_streams(),
              (long long)state_clock_offset(), recorded, atomic_load(&g_stats.recorded_dropped),
              config.record ? "true" : "false", keys_count());
}

void state_reset(void) {
    pthread_mutex_lock(&lock);
    clear_rules();
    clear_records();
    memset(&fault, 0, sizeof fault);
    memset(&delay, 0, sizeof delay);
    atomic_store(&fault_active, false);
    atomic_store(&delay_active, false);
    atomic_fetch_add(&token_generation, 1);
    atomic_store(&g_stats.accepted, 0);
    for (int i = 0; i < R_COUNT; i++) atomic_store(&g_stats.rejected[i], 0);
    atomic_store(&g_stats.streams, 0);
    atomic_store(&g_stats.recorded_dropped, 0);
    atomic_store(&g_stats.max_open_streams, 0);
    atomic_store(&g_stats.mixed_team_conns, 0);
    atomic_store(&g_stats.goaways_sent, 0);
    atomic_store(&g_stats.conns_dropped, 0);
    atomic_store(&g_stats.refused, 0);
    atomic_store(&conn_fault_kind, CONN_NONE);
    atomic_store(&clock_offset_ms, 0);
    pthread_mutex_unlock(&lock);
}

void state_init(const state_config *cfg) { config = *cfg; }

void state_free(void) {
    pthread_mutex_lock(&lock);
    clear_rules();
    clear_records();
    pthread_mutex_unlock(&lock);
}
