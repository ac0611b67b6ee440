#ifndef BK_CMICROHTTPD_SHIM_H
#define BK_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <microhttpd.h>

/* Typed wrappers for libmicrohttpd's variadic functions (Swift cannot call C varargs). */

/* Leaves escapes in the URL and in query arguments as they arrived, so BuzzKit can percent-decode
   path segments one by one (the default unescaper would turn "a%2Fb" into "a/b" before routing). */
static size_t bk_mhd_keep_escapes(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls; (void)c;
  return strlen(s);
}

/* The daemon flags BuzzKit uses: MHD's own polling threads (a pool, epoll), suspend/resume for
   async handlers (implies MHD_USE_ITC, which MHD_quiesce_daemon also needs). */
#define BK_MHD_FLAGS (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME)

/* Starts a daemon with BK_MHD_FLAGS. `ipv4_host` is a dotted IPv4 address ("127.0.0.1", "0.0.0.0"); returns NULL when
   it does not parse or MHD cannot start (port in use, ...). `port` 0 lets the kernel pick one. */
static inline struct MHD_Daemon *bk_mhd_start(uint16_t port, const char *ipv4_host,
                                              MHD_AccessHandlerCallback handler, void *handler_cls,
                                              MHD_RequestCompletedCallback completed, void *completed_cls,
                                              unsigned int thread_pool_size, unsigned int connection_timeout_s) {
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, ipv4_host, &addr.sin_addr) != 1) return NULL;
  return MHD_start_daemon(BK_MHD_FLAGS, port, NULL, NULL, handler, handler_cls,
                          MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                          MHD_OPTION_UNESCAPE_CALLBACK, bk_mhd_keep_escapes, NULL,
                          MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
                          MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_s,
                          MHD_OPTION_END);
}

/* The port the daemon is bound to (useful after starting on port 0); 0 when unknown. */
static inline uint16_t bk_mhd_bind_port(struct MHD_Daemon *daemon) {
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
  return info == NULL ? 0 : info->port;
}

/* Number of open connections (active, idle keep-alive and suspended). */
static inline unsigned int bk_mhd_current_connections(struct MHD_Daemon *daemon) {
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
  return info == NULL ? 0 : info->num_connections;
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

/* Closes the listening socket MHD_quiesce_daemon handed back (only after MHD_stop_daemon). */
static inline void bk_mhd_close_socket(int fd) {
  if (fd >= 0) close(fd);
}

#endif
