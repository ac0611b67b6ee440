#ifndef BK_CNGHTTP2_SHIM_H
#define BK_CNGHTTP2_SHIM_H
/* libnghttp2 (HTTP/2 framing and HPACK; the transport does its own sockets and TLS) and the Linux
   event primitives its event loop uses, which Glibc's Swift module does not export. */
#include <nghttp2/nghttp2.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netdb.h>
#include <netinet/tcp.h>
#endif
