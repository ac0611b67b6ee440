/* Internal to server.c and h2_session.c: one worker thread and its connections. */
#ifndef APNS_SIM_CONN_H
#define APNS_SIM_CONN_H

#include "sim.h"

#include <nghttp2/nghttp2.h>
#include <pthread.h>

typedef struct worker worker;
typedef struct conn conn;

/* One HTTP/2 stream (one push request and its response). One allocation per stream: headers and
   the body live inline, the body capped just above the largest payload limit. */
#define BODY_KEEP 5121
#define HBUF_INLINE 1536
struct stream_req {
    int32_t id;
    conn *c;
    stream_req *prev, *next;             /* the connection's open streams */
    stream_req *dnext, *dprev;           /* the worker's delayed responses, by deadline */
    int64_t deadline;                    /* delayed response due (ms), 0 if none */
    int64_t received_at;
    bool delayed, responded;

    hdr_ref hdrs[MAX_HEADERS];
    uint32_t nhdrs;
    char *hbuf;                          /* header text; points at hinline until it outgrows it */
    uint32_t hlen, hcap;
    int32_t idx_method, idx_path, idx_apns_id, idx_auth, idx_topic, idx_push_type, idx_priority,
        idx_expiration, idx_collapse_id;
    bool duplicate;

    size_t body_len, body_total;
    verdict v;
    char apns_id[37];
    char resp_body[160];
    size_t resp_len, resp_off;

    char hinline[HBUF_INLINE];
    char body[BODY_KEEP];
};

struct conn {
    int fd;
    SSL *ssl;
    nghttp2_session *h2;
    worker *w;
    conn *prev, *next;                   /* the worker's connections */
    stream_req *streams;
    bool handshaked, closing;
    uint32_t events;                     /* current epoll interest */
    char *wbuf;                          /* bytes produced by nghttp2, not yet accepted by SSL_write */
    size_t wlen, woff, wcap;
    token_cache tokens;
    unsigned goaway_seen;
    unsigned settings_seen;
    int open_streams;
    bool goaway_sent;                    /* by us: streams above goaway_last are refused */
    int32_t goaway_last;
    bool drop;                           /* /control/drop fired here: close without answering */
};

#define HANDOFF_MAX 1024
struct worker {
    int epfd, listen_fd, wake_fd;        /* listen_fd: worker 0 only, -1 elsewhere */
    pthread_mutex_t handoff_lock;        /* accepted sockets handed over by worker 0 */
    int handoff[HANDOFF_MAX];
    int nhandoff;
    SSL_CTX *ctx;
    conn *conns;
    stream_req *delayed, *delayed_tail;  /* delayed responses, sorted by deadline */
    unsigned goaway_seen;
    unsigned settings_seen;
};

/* h2_session.c */
conn *conn_new(worker *w, int fd);
void conn_on_event(conn *c, uint32_t events);
void conn_goaway(conn *c);
void conn_send_settings(conn *c);
void conn_free(conn *c);
void conn_respond_delayed(stream_req *s);

/* server.c */
void worker_delay_add(worker *w, stream_req *s);
void worker_delay_remove(worker *w, stream_req *s);
void worker_update_events(conn *c, uint32_t events);

#endif
