/*
 * The listener and worker threads. Each worker owns one epoll loop and every connection handed
 * to it, so the hot path takes no lock; the loop's timeout doubles as the timer for delayed
 * responses. Worker 0 accepts and deals connections round-robin (through a small locked queue and
 * the target's eventfd): SO_REUSEPORT listeners per worker were tried first, but the kernel's hash
 * often put 3 of h2load's 4 connections on one thread, and senders keep few long-lived connections,
 * so an even split matters more than a lock-free accept.
 * The control thread reaches workers only through the eventfd and two atomics (GOAWAY, stop).
 */
#define _GNU_SOURCE /* accept4 */
#include "conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_WORKERS 64

static worker workers[MAX_WORKERS];
static pthread_t threads[MAX_WORKERS];
static int nworkers;
static atomic_bool stopping;
static atomic_uint goaway_generation, settings_generation;

/* Markers in epoll_event.data.ptr for the two non-connection descriptors. */
static char listen_marker, wake_marker;

void worker_update_events(conn *c, uint32_t events) {
    if (c->events == events) return;
    if (events == 0) {
        epoll_ctl(c->w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    } else {
        struct epoll_event ev = {.events = events, .data.ptr = c};
        epoll_ctl(c->w->epfd, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
    }
    c->events = events;
}

/* Sorted insert, searching from the tail: with one delay setting, deadlines arrive in order. */
void worker_delay_add(worker *w, stream_req *s) {
    s->delayed = true;
    stream_req *after = w->delayed_tail;
    while (after && after->deadline > s->deadline) after = after->dprev;
    s->dprev = after;
    s->dnext = after ? after->dnext : w->delayed;
    if (s->dnext) s->dnext->dprev = s;
    else w->delayed_tail = s;
    if (after) after->dnext = s;
    else w->delayed = s;
}

void worker_delay_remove(worker *w, stream_req *s) {
    if (!s->delayed) return;
    s->delayed = false;
    if (s->dprev) s->dprev->dnext = s->dnext;
    else w->delayed = s->dnext;
    if (s->dnext) s->dnext->dprev = s->dprev;
    else w->delayed_tail = s->dprev;
    s->dnext = s->dprev = NULL;
}

static void adopt(worker *w, int fd) {
    conn *c = conn_new(w, fd);
    if (!c) {
        close(fd);
        return;
    }
    c->next = w->conns;
    if (w->conns) w->conns->prev = c;
    w->conns = c;
    worker_update_events(c, EPOLLIN);
}

static void accept_all(worker *w) {
    static unsigned next_worker;
    for (;;) {
        int fd = accept4(w->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return; /* EAGAIN, or a transient error: epoll reports the listener again */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        worker *target = &workers[next_worker++ % (unsigned)nworkers];
        bool queued = false;
        if (target != w) {
            pthread_mutex_lock(&target->handoff_lock);
            if (target->nhandoff < HANDOFF_MAX) {
                target->handoff[target->nhandoff++] = fd;
                queued = true;
            }
            pthread_mutex_unlock(&target->handoff_lock);
            uint64_t v = 1;
            if (queued && write(target->wake_fd, &v, sizeof v) < 0) { /* counter full: already woken */ }
        }
        if (!queued) adopt(w, fd);
    }
}

static void take_handoffs(worker *w) {
    int fds[HANDOFF_MAX];
    pthread_mutex_lock(&w->handoff_lock);
    int n = w->nhandoff;
    memcpy(fds, w->handoff, (size_t)n * sizeof fds[0]);
    w->nhandoff = 0;
    pthread_mutex_unlock(&w->handoff_lock);
    for (int i = 0; i < n; i++) adopt(w, fds[i]);
}

/* Frees the structs of connections closed during this batch. */
static void reap(worker *w) {
    conn *c = w->conns;
    while (c) {
        conn *next = c->next;
        if (c->closing) {
            if (c->prev) c->prev->next = c->next;
            else w->conns = c->next;
            if (c->next) c->next->prev = c->prev;
            free(c);
        }
        c = next;
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    struct epoll_event events[256];
    while (!atomic_load(&stopping)) {
        int timeout = -1;
        if (w->delayed) {
            int64_t wait = w->delayed->deadline - now_ms();
            timeout = wait < 0 ? 0 : (int)wait;
        }
        int n = epoll_wait(w->epfd, events, 256, timeout);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < n; i++) {
            void *p = events[i].data.ptr;
            if (p == &listen_marker) {
                accept_all(w);
            } else if (p == &wake_marker) {
                uint64_t v;
                if (read(w->wake_fd, &v, sizeof v) < 0) { /* nothing to do: only a wake-up */ }
                take_handoffs(w);
                unsigned gen = atomic_load(&goaway_generation);
                if (gen != w->goaway_seen) {
                    w->goaway_seen = gen;
                    for (conn *c = w->conns; c; c = c->next) conn_goaway(c);
                }
                unsigned sgen = atomic_load(&settings_generation);
                if (sgen != w->settings_seen) {
                    w->settings_seen = sgen;
                    for (conn *c = w->conns; c; c = c->next) conn_send_settings(c);
                }
            } else {
                conn_on_event(p, events[i].events);
            }
        }
        /* Due delayed responses; re-read the head each time because answering one may close a
           connection and with it other parked streams. */
        int64_t now = now_ms();
        while (w->delayed && w->delayed->deadline <= now) conn_respond_delayed(w->delayed);
        reap(w);
    }
    take_handoffs(w);
    for (conn *c = w->conns; c; c = c->next) conn_free(c);
    reap(w);
    return NULL;
}

static int listen_socket(const char *host, int port, char *err, size_t errcap) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
        snprintf(err, errcap, "--host must be an IPv4 address: %s", host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 1024) != 0) {
        snprintf(err, errcap, "cannot listen on %s:%d: %s", host, port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int server_start(const server_config *cfg, SSL_CTX *ctx, char *err, size_t errcap) {
    int port = cfg->port;
    nworkers = cfg->threads < 1 ? 1 : cfg->threads > MAX_WORKERS ? MAX_WORKERS : cfg->threads;
    for (int i = 0; i < nworkers; i++) {
        worker *w = &workers[i];
        memset(w, 0, sizeof *w);
        w->ctx = ctx;
        w->listen_fd = -1;
        pthread_mutex_init(&w->handoff_lock, NULL);
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &wake_marker};
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wake_fd, &wev);
        if (i == 0) {
            w->listen_fd = listen_socket(cfg->host, port, err, errcap);
            if (w->listen_fd < 0) return -1;
            struct sockaddr_in a;
            socklen_t alen = sizeof a;
            getsockname(w->listen_fd, (struct sockaddr *)&a, &alen);
            port = ntohs(a.sin_port); /* port 0: the kernel picked one */
            struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &listen_marker};
            epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listen_fd, &lev);
        }
    }
    for (int i = 0; i < nworkers; i++) {
        if (pthread_create(&threads[i], NULL, worker_main, &workers[i]) != 0) {
            snprintf(err, errcap, "cannot start worker thread");
            return -1;
        }
    }
    return port;
}

static void wake_all(void) {
    uint64_t one = 1;
    for (int i = 0; i < nworkers; i++)
        if (write(workers[i].wake_fd, &one, sizeof one) < 0) { /* counter full: already woken */ }
}

void server_goaway_all(void) {
    atomic_fetch_add(&goaway_generation, 1);
    wake_all();
}

void server_settings_all(void) {
    atomic_fetch_add(&settings_generation, 1);
    wake_all();
}

void server_stop(void) {
    atomic_store(&stopping, true);
    wake_all();
    for (int i = 0; i < nworkers; i++) {
        pthread_join(threads[i], NULL);
        if (workers[i].listen_fd >= 0) close(workers[i].listen_fd);
        pthread_mutex_destroy(&workers[i].handoff_lock);
        close(workers[i].wake_fd);
        close(workers[i].epfd);
    }
    nworkers = 0;
}
