/* The raw baseline for bench/http_server.sh: libmicrohttpd with the same flags and thread count as
   BuzzKitHTTPServer, answering GET /hello with the same bytes (an envelope with a 24-hex-digit
   request id, X-Request-Id and Content-Type), responding on the final access-handler call so
   keep-alive works. Usage: mhd_hello PORT [THREADS]. Runs until SIGTERM/SIGINT. */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char BODY[] =
  "{\"success\":true,\"data\":{\"message\":\"hello\"},\"error\":null,"
  "\"metadata\":{\"requestId\":\"0123456789abcdef01234567\"}}";
static int marker;

static enum MHD_Result handler(void *cls, struct MHD_Connection *connection, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls) {
  (void)cls; (void)version; (void)upload_data;
  if (*con_cls == NULL) { *con_cls = &marker; return MHD_YES; }   /* headers only */
  if (*upload_data_size != 0) { *upload_data_size = 0; return MHD_YES; }
  int ok = strcmp(method, "GET") == 0 && strcmp(url, "/hello") == 0;
  struct MHD_Response *response = MHD_create_response_from_buffer(
      ok ? strlen(BODY) : 0, ok ? (void *)BODY : NULL, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(response, "Content-Type", "application/json; charset=utf-8");
  MHD_add_response_header(response, "X-Request-Id", "0123456789abcdef01234567");
  enum MHD_Result r = MHD_queue_response(connection, ok ? 200 : 404, response);
  MHD_destroy_response(response);
  return r;
}

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s PORT [THREADS]\n", argv[0]); return 2; }
  unsigned int threads = argc > 2 ? (unsigned int)atoi(argv[2]) : 2;
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME,
      (uint16_t)atoi(argv[1]), NULL, NULL, handler, NULL,
      MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (d == NULL) { fprintf(stderr, "MHD_start_daemon failed\n"); return 1; }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  while (!stop) pause();
  MHD_stop_daemon(d);
  return 0;
}
