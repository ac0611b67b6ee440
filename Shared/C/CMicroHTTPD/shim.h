#ifndef BK_CMICROHTTPD_SHIM_H
#define BK_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>

/* Typed wrappers for libmicrohttpd's variadic functions (Swift cannot call C varargs). */

/* Leaves escapes in the URL and in query arguments as they arrived, so BuzzKit can percent-decode
   path segments one by one (the default unescaper would turn "a%2Fb" into "a/b" before routing). */
static size_t bk_mhd_keep_escapes(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls; (void)c;
  return strlen(s);
}

/* The daemon flags BuzzKit uses: one internal polling thread per daemon (epoll), suspend/resume
   for async handlers (implies MHD_USE_ITC, which MHD_add_connection from another thread needs),
   and no listening socket of its own: connections come from bk_accept_loop, in turn. */
#define BK_MHD_FLAGS (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET)

/* Starts one network-thread daemon (BK_MHD_FLAGS); NULL when MHD cannot start. */
static inline struct MHD_Daemon *bk_mhd_start(MHD_AccessHandlerCallback handler, void *handler_cls,
                                              MHD_RequestCompletedCallback completed, void *completed_cls,
                                              unsigned int connection_timeout_s) {
  return MHD_start_daemon(BK_MHD_FLAGS, 0, NULL, NULL, handler, handler_cls,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                          MHD_OPTION_UNESCAPE_CALLBACK, bk_mhd_keep_escapes, NULL,
                          MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_s,
                          MHD_OPTION_END);
}

/* A listening TCP socket on `ipv4_host`:`port` (dotted IPv4; port 0 lets the kernel pick),
   backlog SOMAXCONN, close-on-exec, SO_REUSEADDR (a restart need not wait for TIME_WAIT). Returns the descriptor,
   -2 when the host does not parse, -1 when the socket cannot be bound or listen (errno set). */
static inline int bk_listen_ipv4(const char *ipv4_host, uint16_t port) {
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, ipv4_host, &addr.sin_addr) != 1) return -2;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, SOMAXCONN) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

/* The port a socket is bound to; 0 when unknown. */
static inline uint16_t bk_socket_port(int fd) {
  struct sockaddr_in addr;
  socklen_t length = sizeof(addr);
  if (getsockname(fd, (struct sockaddr *)&addr, &length) != 0) return 0;
  return ntohs(addr.sin_port);
}

/* Accepts connections on `fd` and hands each to the next of the `count` daemons in turn, so every
   network thread gets an equal share (MHD's own thread pool lets its threads race to accept, and
   one thread often took most of a client's connections). Blocks until the socket is shut down
   (bk_listen_stop). MHD_add_connection closes a connection it cannot take. */
static inline void bk_accept_loop(int fd, struct MHD_Daemon *const *daemons, unsigned int count) {
  unsigned int next = 0;
  for (;;) {
    struct sockaddr_storage addr;
    socklen_t length = sizeof(addr);
    int client = accept(fd, (struct sockaddr *)&addr, &length);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        usleep(10000); /* out of descriptors or memory: let some connections close */
        continue;
      }
      return; /* EINVAL once bk_listen_stop shut the socket down */
    }
    (void)fcntl(client, F_SETFD, FD_CLOEXEC);
    (void)MHD_add_connection(daemons[next], client, (const struct sockaddr *)&addr, length);
    next = (next + 1) % count;
  }
}

/* Stops accepting: a blocked bk_accept_loop returns; pending connections are refused. */
static inline void bk_listen_stop(int fd) {
  if (fd >= 0) shutdown(fd, SHUT_RDWR);
}

/* Writes the client's IP address as text into `buf`; returns 0 on success, -1 when unknown. */
static inline int bk_mhd_client_address(struct MHD_Connection *connection, char *buf, socklen_t len) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == NULL || info->client_addr == NULL) return -1;
  const struct sockaddr *sa = info->client_addr;
  if (sa->sa_family == AF_INET) {
    return inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, len) ? 0 : -1;
  }
  if (sa->sa_family == AF_INET6) {
    return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, len) ? 0 : -1;
  }
  return -1;
}

/* Closes the listening socket (after the accept loop has returned). */
static inline void bk_close_socket(int fd) {
  if (fd >= 0) close(fd);
}

#endif
