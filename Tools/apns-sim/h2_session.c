/*
 * One HTTP/2 connection: OpenSSL does the TLS on a non-blocking socket, nghttp2's server session
 * does the framing through its memory API (mem_recv / mem_send), so no callback ever blocks and
 * every write is batched into one SSL_write of up to 64 KiB.
 *
 * A stream's request is checked when its END_STREAM arrives; the response is submitted at once,
 * or parked on the worker's timer list when /control/delay is active.
 */
#include "conn.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/err.h>

#define WRITE_BATCH (64 * 1024)

static const char goaway_debug[] = "{\"reason\":\"Shutdown\"}";

static bool name_is(const uint8_t *name, size_t len, const char *lit, size_t litlen) {
    return len == litlen && memcmp(name, lit, litlen) == 0;
}
#define NAME_IS(n, l, lit) name_is(n, l, lit, sizeof(lit) - 1)

static stream_req *stream_new(conn *c, int32_t id) {
    /* Not calloc: the inline buffers are large and only the bookkeeping needs zeroing. */
    stream_req *s = malloc(sizeof *s);
    if (!s) return NULL;
    memset(s, 0, offsetof(stream_req, hinline));
    s->id = id;
    s->c = c;
    s->hbuf = s->hinline;
    s->hcap = HBUF_INLINE;
    s->idx_method = s->idx_path = s->idx_apns_id = s->idx_auth = s->idx_topic = s->idx_push_type = -1;
    s->idx_priority = s->idx_expiration = s->idx_collapse_id = -1;
    s->next = c->streams;
    if (c->streams) c->streams->prev = s;
    c->streams = s;
    state_note_open_streams(++c->open_streams);
    return s;
}

static void stream_free(stream_req *s) {
    conn *c = s->c;
    if (s->prev) s->prev->next = s->next;
    else c->streams = s->next;
    if (s->next) s->next->prev = s->prev;
    if (s->delayed) worker_delay_remove(c->w, s);
    if (s->hbuf != s->hinline) free(s->hbuf);
    c->open_streams--;
    free(s);
}

static bool hbuf_append(stream_req *s, const uint8_t *p, size_t n, uint32_t *off) {
    if ((size_t)s->hlen + n > 1u << 20) return false; /* nobody sends a megabyte of headers */
    if (s->hlen + n > s->hcap) {
        uint32_t cap = s->hcap * 2;
        while (cap < s->hlen + n) cap *= 2;
        char *nb = malloc(cap);
        if (!nb) return false;
        memcpy(nb, s->hbuf, s->hlen);
        if (s->hbuf != s->hinline) free(s->hbuf);
        s->hbuf = nb;
        s->hcap = cap;
    }
    memcpy(s->hbuf + s->hlen, p, n);
    *off = s->hlen;
    s->hlen += (uint32_t)n;
    return true;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
    conn *c = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    stream_req *s = stream_new(c, frame->hd.stream_id);
    if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets just this stream */
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, s);
    atomic_fetch_add_explicit(&g_stats.streams, 1, memory_order_relaxed);
    return 0;
}

static void note_header(stream_req *s, int32_t *idx, int32_t i, bool pseudo) {
    if (*idx >= 0 && !pseudo) s->duplicate = true;
    *idx = i;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
    (void)flags;
    (void)user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    stream_req *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!s || s->nhdrs == MAX_HEADERS) return 0;
    hdr_ref *h = &s->hdrs[s->nhdrs];
    if (!hbuf_append(s, name, namelen, &h->name_off) || !hbuf_append(s, value, valuelen, &h->value_off))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    h->name_len = (uint32_t)namelen;
    h->value_len = (uint32_t)valuelen;
    int32_t i = (int32_t)s->nhdrs++;
    if (NAME_IS(name, namelen, ":method")) note_header(s, &s->idx_method, i, true);
    else if (NAME_IS(name, namelen, ":path")) note_header(s, &s->idx_path, i, true);
    else if (NAME_IS(name, namelen, "authorization")) note_header(s, &s->idx_auth, i, false);
    else if (NAME_IS(name, namelen, "apns-id")) note_header(s, &s->idx_apns_id, i, false);
    else if (NAME_IS(name, namelen, "apns-topic")) note_header(s, &s->idx_topic, i, false);
    else if (NAME_IS(name, namelen, "apns-push-type")) note_header(s, &s->idx_push_type, i, false);
    else if (NAME_IS(name, namelen, "apns-priority")) note_header(s, &s->idx_priority, i, false);
    else if (NAME_IS(name, namelen, "apns-expiration")) note_header(s, &s->idx_expiration, i, false);
    else if (NAME_IS(name, namelen, "apns-collapse-id")) note_header(s, &s->idx_collapse_id, i, false);
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                         size_t len, void *user_data) {
    (void)flags;
    (void)user_data;
    stream_req *s = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!s) return 0;
    /* Keep just enough to tell "too large" apart; count the rest. */
    size_t room = BODY_KEEP - s->body_len;
    size_t n = len < room ? len : room;
    memcpy(s->body + s->body_len, data, n);
    s->body_len += n;
    s->body_total += len;
    return 0;
}

static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *user_data) {
    (void)session;
    (void)stream_id;
    (void)user_data;
    stream_req *s = source->ptr;
    size_t n = s->resp_len - s->resp_off;
    if (n > length) n = length;
    memcpy(buf, s->resp_body + s->resp_off, n);
    s->resp_off += n;
    if (s->resp_off == s->resp_len) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

#define MAKE_NV(n, v, vl) \
    { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NO_COPY_NAME }
/* Per-response values (ids) would only churn the client's HPACK table: never index them. */
#define MAKE_NV_UNIQUE(n, v, vl) \
    { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_INDEX }

static void submit_response(stream_req *s) {
    char status[4];
    snprintf(status, sizeof status, "%d", s->v.status ? s->v.status : 200);
    char unique_id[37], retry_after[16];
    nghttp2_nv nva[5] = {
        MAKE_NV(":status", status, 3),
        MAKE_NV_UNIQUE("apns-id", s->apns_id, 36),
    };
    size_t n = 2;
    if (s->v.retry_after > 0) {
        int len = snprintf(retry_after, sizeof retry_after, "%d", s->v.retry_after);
        nva[n++] = (nghttp2_nv)MAKE_NV("retry-after", retry_after, (size_t)len);
    }
    if (s->v.status == 0) {
        /* Sandbox APNs adds apns-unique-id to successful responses. */
        uuid_v4(unique_id);
        for (int i = 0; i < 36; i++)
            if (unique_id[i] >= 'A' && unique_id[i] <= 'F') unique_id[i] = (char)(unique_id[i] - 'A' + 'a');
        nva[n++] = (nghttp2_nv)MAKE_NV_UNIQUE("apns-unique-id", unique_id, 36);
    } else {
        nva[n++] = (nghttp2_nv)MAKE_NV("content-type", "application/json", 16);
    }
    s->responded = true;
    if (s->resp_len) {
        nghttp2_data_provider prd = {.source.ptr = s, .read_callback = read_body};
        nghttp2_submit_response(s->c->h2, s->id, nva, n, &prd);
    } else {
        nghttp2_submit_response(s->c->h2, s->id, nva, n, NULL);
    }
}

static const char *hval(stream_req *s, int32_t idx, size_t *len) {
    if (idx < 0) {
        *len = 0;
        return NULL;
    }
    *len = s->hdrs[idx].value_len;
    return s->hbuf + s->hdrs[idx].value_off;
}

static void record_push(stream_req *s, const request_view *r) {
    const char *names[MAX_HEADERS], *vals[MAX_HEADERS];
    size_t name_lens[MAX_HEADERS], val_lens[MAX_HEADERS];
    size_t n = 0;
    for (uint32_t i = 0; i < s->nhdrs; i++) {
        const char *name = s->hbuf + s->hdrs[i].name_off;
        size_t nl = s->hdrs[i].name_len;
        if (nl && name[0] == ':') continue;
        if (nl == 13 && memcmp(name, "authorization", 13) == 0) continue;
        names[n] = name;
        name_lens[n] = nl;
        vals[n] = s->hbuf + s->hdrs[i].value_off;
        val_lens[n] = s->hdrs[i].value_len;
        n++;
    }
    state_record(r, s->apns_id, names, name_lens, vals, val_lens, n, s->received_at);
}

/* GOAWAY with the last stream we have seen (it and every stream below it are answered; the
   client must resend the others elsewhere, and those that still arrive here are refused). */
static void submit_goaway(conn *c) {
    if (c->goaway_sent) return;
    c->goaway_sent = true;
    c->goaway_last = nghttp2_session_get_last_proc_stream_id(c->h2);
    atomic_fetch_add(&g_stats.goaways_sent, 1);
    nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, c->goaway_last, NGHTTP2_NO_ERROR, (const uint8_t *)goaway_debug,
                          sizeof goaway_debug - 1);
}

/* The whole request is in: decide, count, record, then answer now or after the injected delay. */
static void handle_request(conn *c, stream_req *s) {
    if (c->goaway_sent && s->id > c->goaway_last) {
        /* Above the last stream id of our GOAWAY: never processed (RFC 9113 §6.8). */
        s->responded = true;
        atomic_fetch_add(&g_stats.refused, 1);
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_REFUSED_STREAM);
        return;
    }
    if (c->drop) {
        s->responded = true; /* arrived with the request that dropped the connection: never taken */
        return;
    }
    conn_fault armed = state_take_conn_fault();
    if (armed == CONN_DROP) {
        /* Dropped with this request (and whatever else is in flight) unanswered. */
        s->responded = true;
        c->drop = true;
        return;
    }
    request_view r;
    memset(&r, 0, sizeof r);
    r.method = hval(s, s->idx_method, &r.method_len);
    r.path = hval(s, s->idx_path, &r.path_len);
    r.apns_id = hval(s, s->idx_apns_id, &r.apns_id_len);
    r.auth = hval(s, s->idx_auth, &r.auth_len);
    r.topic = hval(s, s->idx_topic, &r.topic_len);
    r.push_type = hval(s, s->idx_push_type, &r.push_type_len);
    r.priority = hval(s, s->idx_priority, &r.priority_len);
    r.expiration = hval(s, s->idx_expiration, &r.expiration_len);
    r.collapse_id = hval(s, s->idx_collapse_id, &r.collapse_id_len);
    r.duplicate = s->duplicate;
    r.body = s->body;
    r.body_len = s->body_len;
    r.body_total = s->body_total;
    if (!r.method) { r.method = ""; }
    if (!r.path) { r.path = ""; }

    int64_t now = now_ms();
    s->received_at = now;
    verdict *v = &s->v;
    validate_request(&r, &c->tokens, now + state_clock_offset(), v);
    if (!v->status) state_token_rule(r.token, r.token_len, v);
    if (!v->status) state_take_fault(v, now);

    if (r.apns_id && is_uuid(r.apns_id, r.apns_id_len)) {
        memcpy(s->apns_id, r.apns_id, 36);
        s->apns_id[36] = '\0';
    } else {
        uuid_v4(s->apns_id);
    }

    if (!v->status) {
        atomic_fetch_add_explicit(&g_stats.accepted, 1, memory_order_relaxed);
        if (state_recording()) record_push(s, &r);
        s->resp_len = 0;
    } else {
        atomic_fetch_add_explicit(&g_stats.rejected[v->reason], 1, memory_order_relaxed);
        const char *reason = v->reason == R_Custom ? v->custom : reason_names[v->reason];
        int n = v->timestamp
                    ? snprintf(s->resp_body, sizeof s->resp_body, "{\"reason\":\"%s\",\"timestamp\":%lld}", reason,
                               (long long)v->timestamp)
                    : snprintf(s->resp_body, sizeof s->resp_body, "{\"reason\":\"%s\"}", reason);
        s->resp_len = n > 0 && (size_t)n < sizeof s->resp_body ? (size_t)n : 0;
    }

    int delay = state_take_delay();
    if (delay > 0) {
        s->deadline = now + delay;
        worker_delay_add(c->w, s);
    } else {
        submit_response(s);
    }
    if (armed == CONN_GOAWAY) submit_goaway(c);
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
    conn *c = user_data;
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        stream_req *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (s && !s->responded && !s->delayed) handle_request(c, s);
    } else if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR) {
        fprintf(stderr, "apns-sim: connection closed: GOAWAY received: %s\n",
                nghttp2_http2_strerror(frame->goaway.error_code));
    }
    return 0;
}

/* A GOAWAY with an error code is how nghttp2 ends a session it found broken (flow control,
   protocol, flood limits): the client only sees its streams fail, so say why here. */
static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
    (void)session;
    (void)user_data;
    if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR)
        fprintf(stderr, "apns-sim: connection closed: GOAWAY sent: %s\n", nghttp2_http2_strerror(frame->goaway.error_code));
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
    (void)error_code;
    (void)user_data;
    stream_req *s = nghttp2_session_get_stream_user_data(session, stream_id);
    if (s) {
        nghttp2_session_set_stream_user_data(session, stream_id, NULL);
        stream_free(s);
    }
    return 0;
}

/* nghttp2 callbacks and options are the same for every connection: built once, shared read-only. */
static nghttp2_session_callbacks *shared_callbacks;
static nghttp2_option *shared_options;
static pthread_once_t callbacks_once = PTHREAD_ONCE_INIT;

static void init_callbacks(void) {
    /* Debian's nghttp2 1.52 carries the CVE-2023-44487 ("rapid reset") limit: more than 1000
       incoming RST_STREAM frames (plus 33 a second) and the session is torn down with
       GOAWAY(INTERNAL_ERROR). libcurl 7.88 resets streams it is done with, so a sender pushing
       thousands a second hit it about every thousand pushes: that was the `connection_broken`
       retries (broken pipe, connection reset) the push benchmark showed. APNs documents no such
       limit, so the stand-in does not impose one. */
    nghttp2_option_new(&shared_options);
    nghttp2_option_set_stream_reset_rate_limit(shared_options, (uint64_t)1 << 40, (uint64_t)1 << 30);
    nghttp2_session_callbacks_new(&shared_callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(shared_callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(shared_callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(shared_callbacks, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(shared_callbacks, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(shared_callbacks, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(shared_callbacks, on_frame_send);
}

conn *conn_new(worker *w, int fd) {
    conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    c->w = w;
    c->ssl = SSL_new(w->ctx);
    if (!c->ssl) {
        free(c);
        return NULL;
    }
    SSL_set_fd(c->ssl, fd);
    SSL_set_accept_state(c->ssl);
    c->goaway_seen = w->goaway_seen;
    c->tokens.generation = state_token_generation();
    atomic_fetch_add(&g_stats.connections_total, 1);
    atomic_fetch_add(&g_stats.connections_current, 1);
    return c;
}

static bool start_h2(conn *c) {
    const unsigned char *alpn = NULL;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(c->ssl, &alpn, &alpn_len);
    if (alpn_len != 2 || memcmp(alpn, "h2", 2) != 0) return false;
    pthread_once(&callbacks_once, init_callbacks);
    if (nghttp2_session_server_new2(&c->h2, shared_callbacks, c, shared_options) != 0) return false;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, state_max_streams()},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
    };
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) != 0) return false;
    /* A large connection window so hundreds of concurrent small bodies never wait on WINDOW_UPDATE. */
    nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, 1 << 24);
    return true;
}

/* Drains everything OpenSSL can give (level-triggered epoll would not report bytes already
   decrypted into OpenSSL's buffer) and feeds it to nghttp2. */
static bool conn_read(conn *c) {
    uint8_t buf[16384];
    for (;;) {
        int n = SSL_read(c->ssl, buf, sizeof buf);
        if (n > 0) {
            ssize_t r = nghttp2_session_mem_recv(c->h2, buf, (size_t)n);
            if (r < 0) {
                /* A fatal HTTP/2 error: the connection is dropped. Say why (rare, and the only
                   trace a client gets is a reset). */
                fprintf(stderr, "apns-sim: connection closed: nghttp2: %s\n", nghttp2_strerror((int)r));
                return false;
            }
            if (c->drop) {
                /* /control/drop: a reset, not an orderly close (SO_LINGER 0 makes close() send RST). */
                struct linger hard = {.l_onoff = 1, .l_linger = 0};
                setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
                atomic_fetch_add(&g_stats.conns_dropped, 1);
                return false;
            }
            continue;
        }
        int err = SSL_get_error(c->ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return true;
        if (err != SSL_ERROR_ZERO_RETURN && !(err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && n == 0)) {
            unsigned long e = ERR_peek_error();
            fprintf(stderr, "apns-sim: connection closed: TLS error %d (%s)\n", err,
                    e ? ERR_reason_error_string(e) : "no detail");
        }
        ERR_clear_error();
        return false; /* closed by the peer, or a TLS error */
    }
}

static bool wbuf_append(conn *c, const uint8_t *p, size_t n) {
    if (c->wlen + n > c->wcap) {
        size_t cap = c->wcap ? c->wcap : WRITE_BATCH;
        while (cap < c->wlen + n) cap *= 2;
        char *nb = realloc(c->wbuf, cap);
        if (!nb) return false;
        c->wbuf = nb;
        c->wcap = cap;
    }
    memcpy(c->wbuf + c->wlen, p, n);
    c->wlen += n;
    return true;
}

/* Flushes what is pending, then serializes nghttp2's queue in batches. Returns false on a fatal
   error. Leaves EPOLLOUT armed only while OpenSSL could not take everything. */
static bool conn_write(conn *c) {
    for (;;) {
        while (c->woff < c->wlen) {
            int n = SSL_write(c->ssl, c->wbuf + c->woff, (int)(c->wlen - c->woff));
            if (n > 0) {
                c->woff += (size_t)n;
                continue;
            }
            int err = SSL_get_error(c->ssl, n);
            if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
                worker_update_events(c, EPOLLIN | EPOLLOUT);
                return true;
            }
            fprintf(stderr, "apns-sim: connection closed: TLS write error %d\n", err);
            ERR_clear_error();
            return false;
        }
        c->woff = c->wlen = 0;
        if (!c->h2) break;
        while (c->wlen < WRITE_BATCH) {
            const uint8_t *data;
            ssize_t n = nghttp2_session_mem_send(c->h2, &data);
            if (n < 0) {
                fprintf(stderr, "apns-sim: connection closed: nghttp2 send: %s\n", nghttp2_strerror((int)n));
                return false;
            }
            if (n == 0) break;
            if (!wbuf_append(c, data, (size_t)n)) return false;
        }
        if (c->wlen == 0) break;
    }
    worker_update_events(c, EPOLLIN);
    return true;
}

/* After any activity: a session that neither wants to read nor write (GOAWAY exchanged and
   streams finished, or the peer went away) is closed. */
static void conn_after_io(conn *c, bool ok) {
    if (ok && c->h2 && (nghttp2_session_want_read(c->h2) || nghttp2_session_want_write(c->h2) || c->woff < c->wlen))
        return;
    if (ok && !c->h2) return;
    if (ok && c->streams) fprintf(stderr, "apns-sim: connection closed: session ended with streams open\n");
    conn_free(c);
}

void conn_on_event(conn *c, uint32_t events) {
    if (c->closing) return;
    if (!c->handshaked) {
        int r = SSL_do_handshake(c->ssl);
        if (r != 1) {
            int err = SSL_get_error(c->ssl, r);
            if (err == SSL_ERROR_WANT_READ) { worker_update_events(c, EPOLLIN); return; }
            if (err == SSL_ERROR_WANT_WRITE) { worker_update_events(c, EPOLLIN | EPOLLOUT); return; }
            ERR_clear_error();
            conn_free(c);
            return;
        }
        c->handshaked = true;
        if (!start_h2(c)) {
            conn_free(c);
            return;
        }
    } else if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN)) {
        conn_free(c);
        return;
    }
    bool ok = conn_read(c) && conn_write(c);
    conn_after_io(c, ok);
}

void conn_respond_delayed(stream_req *s) {
    conn *c = s->c;
    worker_delay_remove(c->w, s);
    submit_response(s); /* s may be freed by the write below */
    conn_after_io(c, conn_write(c));
}

void conn_goaway(conn *c) {
    if (c->closing || !c->h2) return;
    submit_goaway(c);
    conn_after_io(c, conn_write(c));
}

void conn_send_settings(conn *c) {
    if (c->closing || !c->h2) return;
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, state_max_streams()}};
    nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 1);
    conn_after_io(c, conn_write(c));
}

/* Releases everything but the struct itself, which the worker frees after the current epoll
   batch (a later event in the same batch may still point at it). */
void conn_free(conn *c) {
    if (c->closing) return;
    c->closing = true;
    while (c->streams) stream_free(c->streams); /* nghttp2_session_del does not report closes */
    if (c->h2) nghttp2_session_del(c->h2);
    c->h2 = NULL;
    if (c->ssl) {
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    ERR_clear_error();
    worker_update_events(c, 0);
    close(c->fd);
    c->fd = -1;
    free(c->wbuf);
    c->wbuf = NULL;
    token_cache_clear(&c->tokens);
    atomic_fetch_sub(&g_stats.connections_current, 1);
}
