#ifndef BK_CHIREDIS_SHIM_H
#define BK_CHIREDIS_SHIM_H
// hiredis 0.14.1 (Debian 12). Swift cannot import `redisCommand` (variadic) and reads C structs with
// fixed arrays awkwardly: BuzzKitRedis only uses the argv functions plus these small typed helpers.
#include <hiredis/hiredis.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/time.h>

/// Connects over TCP with a connect timeout in milliseconds. Never NULL unless out of memory;
/// check `bk_redis_err` afterwards.
static inline redisContext *bk_redis_connect(const char *host, int port, long timeout_ms) {
    struct timeval tv;
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    return redisConnectWithTimeout(host, port, tv);
}

/// Sets the socket send/receive timeout (SO_SNDTIMEO/SO_RCVTIMEO) in milliseconds.
static inline int bk_redis_set_timeout(redisContext *c, long timeout_ms) {
    struct timeval tv;
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    return redisSetTimeout(c, tv);
}

/// Keeps the reply reader's buffer between replies instead of freeing it whenever it is empty
/// and larger than 16 KB (hiredis' default `maxbuf`). A stream consumer reading 500 entries of
/// 300 B gets ~175 KB replies: without this every batch reallocates (and page-faults) that buffer.
/// The cost is keeping up to the largest reply's size per connection.
static inline void bk_redis_keep_reader_buffer(redisContext *c) { if (c->reader) c->reader->maxbuf = 0; }

/// Whether an idle context's socket can no longer carry a command: the server closed it (a
/// restarted or stopped Redis leaves every pooled socket at end of file) or it holds bytes no
/// command asked for. One non-blocking peek; the caller replaces such a context before sending,
/// so the first command after a restart does not fail on a socket that was dead before it began.
static inline int bk_redis_idle_socket_unusable(const redisContext *c) {
    char byte;
    ssize_t n = recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n >= 0) return 1;
    return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

static inline int bk_redis_err(const redisContext *c) { return c->err; }
static inline const char *bk_redis_errstr(const redisContext *c) { return c->errstr; }
static inline int bk_errno(void) { return errno; }
static inline void bk_clear_errno(void) { errno = 0; }
static inline int bk_is_timeout_errno(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == ETIMEDOUT; }

#endif
