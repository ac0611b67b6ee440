/*
 * The control API: plain HTTP/1.1 on its own port, one request per connection (Connection: close),
 * served on the main thread. It is for tests and the local stack only, so it is deliberately
 * simple and blocking (with socket timeouts so a stuck client cannot wedge it); the push port
 * never waits on it.
 *
 *   POST /control/unregister  {"token", "timestamp"?}  later pushes: 410 Unregistered + timestamp (ms)
 *   POST /control/bad-token   {"token"}                later pushes: 400 BadDeviceToken
 *   POST /control/clear-token {"token"}                drop either rule
 *   POST /control/fail        {"status", "reason"?, "count"? | "seconds"?, "retryAfter"?}
 *   POST /control/delay       {"ms", "count"?}         ms 0 clears
 *   POST /control/goaway      {"afterRequests"?}       GOAWAY on every connection, or on the one
 *                                                      that gets the Nth request from now
 *   POST /control/drop        {"afterRequests"?}       the connection that gets the Nth request
 *                                                      (default 1st) is reset, nothing answered
 *   POST /control/settings    {"maxConcurrentStreams"} SETTINGS for every connection, old and new
 *   POST /control/clock       {"offsetMs"}             shift the clock provider tokens are judged by
 *   POST /control/reset                                faults, rules, recordings, token caches, counters
 *   POST /control/keys        {"kid", "team", "pem"}   register (or replace) a provider key
 *   GET  /control/pushes?token=<hex>&limit=N           accepted pushes, oldest first (default limit 10000)
 *   GET  /control/stats
 *   GET  /control/health
 */
#define _GNU_SOURCE /* accept4, strcasestr */
#include "sim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define MAX_REQUEST (1 << 20)

int control_listen(const char *host, int port, int *bound_port) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 128) != 0) {
        close(fd);
        return -1;
    }
    socklen_t alen = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &alen);
    *bound_port = ntohs(addr.sin_port);
    return fd;
}

static void send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void respond(int fd, int status, const char *body, size_t len) {
    const char *text = status == 200 ? "OK" : status == 400 ? "Bad Request" : status == 404 ? "Not Found"
                     : status == 405 ? "Method Not Allowed" : status == 411 ? "Length Required"
                     : status == 413 ? "Payload Too Large" : "Error";
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, text, len);
    send_all(fd, head, (size_t)n);
    send_all(fd, body, len);
}

static void respond_error(int fd, int status, const char *msg) {
    sbuf b;
    sbuf_init(&b);
    sbuf_adds(&b, "{\"error\":");
    sbuf_add_json_str(&b, msg, strlen(msg));
    sbuf_adds(&b, "}");
    respond(fd, status, b.data, b.len);
    sbuf_free(&b);
}

static const char ok_body[] = "{\"ok\":true}";

/* Body helpers: a member as a string / integer; absent members leave the output untouched. */
static int get_str(const char *body, size_t len, const char *key, char *out, size_t cap) {
    const char *v;
    size_t vl;
    if (!json_member(body, len, key, &v, &vl)) return 0;
    return json_string(v, vl, out, cap, NULL) ? 1 : -1;
}

static int get_int(const char *body, size_t len, const char *key, long long *out) {
    const char *v;
    size_t vl;
    if (!json_member(body, len, key, &v, &vl)) return 0;
    return json_int(v, vl, out) ? 1 : -1;
}

static const char *default_reason(long long status) {
    switch (status) {
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    case 410: return "Unregistered";
    case 403: return "Forbidden";
    case 400: return "BadDeviceToken";
    default: return "InternalServerError";
    }
}

static void handle_post(int fd, const char *path, const char *body, size_t len) {
    if (len == 0) body = "{}", len = 2;
    if (json_check(body, len) != JSON_OBJECT) { respond_error(fd, 400, "body must be a JSON object"); return; }

    if (!strcmp(path, "/control/unregister") || !strcmp(path, "/control/bad-token") ||
        !strcmp(path, "/control/clear-token")) {
        char token[512];
        if (get_str(body, len, "token", token, sizeof token) != 1 || !token[0])
            { respond_error(fd, 400, "token (string) required"); return; }
        if (!strcmp(path, "/control/clear-token")) {
            state_clear_token_rule(token, strlen(token));
        } else if (!strcmp(path, "/control/unregister")) {
            long long ts = now_ms();
            if (get_int(body, len, "timestamp", &ts) < 0) { respond_error(fd, 400, "timestamp must be an integer (ms)"); return; }
            state_set_token_rule(token, strlen(token), 410, ts);
        } else {
            state_set_token_rule(token, strlen(token), 400, 0);
        }
        { respond(fd, 200, ok_body, sizeof ok_body - 1); return; }
    }
    if (!strcmp(path, "/control/fail")) {
        long long status = 0, count = 0, seconds = 0, retry_after = 0;
        char reason[48] = "";
        if (get_int(body, len, "status", &status) != 1 || status < 400 || status > 599)
            { respond_error(fd, 400, "status (400-599) required"); return; }
        if (get_str(body, len, "reason", reason, sizeof reason) < 0) { respond_error(fd, 400, "reason must be a string"); return; }
        for (const char *p = reason; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
                { respond_error(fd, 400, "reason must be alphanumeric"); return; }
        if (!reason[0]) snprintf(reason, sizeof reason, "%s", default_reason(status));
        if (get_int(body, len, "count", &count) < 0 || get_int(body, len, "seconds", &seconds) < 0 || count < 0 ||
            seconds < 0)
            { respond_error(fd, 400, "count and seconds must be non-negative integers"); return; }
        if (get_int(body, len, "retryAfter", &retry_after) < 0 || retry_after < 0 || retry_after > 86400)
            { respond_error(fd, 400, "retryAfter must be 0-86400 (seconds)"); return; }
        if (count == 0 && seconds == 0) count = 1;
        state_set_fault((int)status, reason, count, seconds, (int)retry_after, now_ms());
        { respond(fd, 200, ok_body, sizeof ok_body - 1); return; }
    }
    if (!strcmp(path, "/control/delay")) {
        long long ms = -1, count = 0;
        if (get_int(body, len, "ms", &ms) != 1 || ms < 0 || ms > 600000)
            { respond_error(fd, 400, "ms (0-600000) required"); return; }
        if (get_int(body, len, "count", &count) < 0 || count < 0) { respond_error(fd, 400, "count must be >= 0"); return; }
        state_set_delay((int)ms, count);
        { respond(fd, 200, ok_body, sizeof ok_body - 1); return; }
    }
    if (!strcmp(path, "/control/goaway") || !strcmp(path, "/control/drop")) {
        bool drop = !strcmp(path, "/control/drop");
        long long after = 0;
        int has = get_int(body, len, "afterRequests", &after);
        if (has < 0 || (has == 1 && after < 1)) { respond_error(fd, 400, "afterRequests must be >= 1"); return; }
        if (!drop && has == 0) server_goaway_all();
        else state_set_conn_fault(drop ? CONN_DROP : CONN_GOAWAY, has == 1 ? after : 1);
        { respond(fd, 200, ok_body, sizeof ok_body - 1); return; }
    }
    if (!strcmp(path, "/control/settings")) {
        long long n = 0;
        if (get_int(body, len, "maxConcurrentStreams", &n) != 1 || n < 1 || n > 1000000)
            { respond_error(fd, 400, "maxConcurrentStreams (1-1000000) required"); return; }
        state_set_max_streams((unsigned)n);
        server_settings_all();
        { respond(fd, 200, ok_body, sizeof ok_body - 1); return; }
    }
    if (!strcmp(path, "/control/clock")) {
        long long offset = 0;
        if (get_int(body, len, "offsetMs", &offset) != 1 || offset < -86400000LL * 365 || offset > 86400000LL * 365)
            { respond_error(fd, 400, "offsetMs (an integer, at most a year either way) required"); return; }
        state_set_clock_offset(offset);
        { respond(fd, 200, ok_body, sizeof ok_body - 1); return; }
    }
    if (!strcmp(path, "/control/reset")) {
        state_reset();
        if (state_max_streams() != 1000) {
            state_set_max_streams(1000);
            server_settings_all();
        }
        { respond(fd, 200, ok_body, sizeof ok_body - 1); return; }
    }
    if (!strcmp(path, "/control/keys")) {
        char kid[64], team[64], err[160];
        char *pem = malloc(len + 1);
        if (!pem) { respond_error(fd, 500, "out of memory"); return; }
        if (get_str(body, len, "kid", kid, sizeof kid) != 1 || get_str(body, len, "team", team, sizeof team) != 1 ||
            get_str(body, len, "pem", pem, len + 1) != 1) {
            free(pem);
            { respond_error(fd, 400, "kid, team and pem (strings) required"); return; }
        }
        int rc = keys_add_pem(kid, team, pem, strlen(pem), err, sizeof err);
        free(pem);
        if (rc != 0) { respond_error(fd, 400, err); return; }
        { respond(fd, 200, ok_body, sizeof ok_body - 1); return; }
    }
    respond_error(fd, 404, "no such control endpoint");
}

static int unhex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Finds `name` in a query string and percent-decodes its value into out. */
static bool query_param(const char *query, const char *name, char *out, size_t cap) {
    size_t nl = strlen(name);
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t seg = amp ? (size_t)(amp - p) : strlen(p);
        if (seg > nl && !strncmp(p, name, nl) && p[nl] == '=') {
            size_t o = 0;
            for (size_t i = nl + 1; i < seg && o + 1 < cap; i++) {
                if (p[i] == '%' && i + 2 < seg && unhex(p[i + 1]) >= 0 && unhex(p[i + 2]) >= 0) {
                    out[o++] = (char)(unhex(p[i + 1]) * 16 + unhex(p[i + 2]));
                    i += 2;
                } else {
                    out[o++] = p[i] == '+' ? ' ' : p[i];
                }
            }
            out[o] = '\0';
            return true;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

static void handle_get(int fd, const char *path, const char *query) {
    sbuf b;
    sbuf_init(&b);
    if (!strcmp(path, "/control/pushes")) {
        char token[512], limit_s[32];
        long long limit = 10000;
        bool has_token = query && query_param(query, "token", token, sizeof token) && token[0];
        if (query && query_param(query, "limit", limit_s, sizeof limit_s)) {
            char *end;
            limit = strtoll(limit_s, &end, 10);
            if (*end || limit < 0) {
                sbuf_free(&b);
                { respond_error(fd, 400, "limit must be a non-negative integer"); return; }
            }
        }
        state_pushes_json(&b, has_token ? token : NULL, has_token ? strlen(token) : 0, limit);
    } else if (!strcmp(path, "/control/stats")) {
        state_stats_json(&b);
    } else if (!strcmp(path, "/control/health")) {
        sbuf_adds(&b, ok_body);
    } else {
        sbuf_free(&b);
        { respond_error(fd, 404, "no such control endpoint"); return; }
    }
    respond(fd, 200, b.data, b.len);
    sbuf_free(&b);
}

static void serve_one(int fd) {
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sbuf in;
    sbuf_init(&in);
    char *head_end = NULL;
    while (!head_end) {
        sbuf_reserve(&in, 4096);
        ssize_t n = recv(fd, in.data + in.len, 4096, 0);
        if (n <= 0) goto done;
        in.len += (size_t)n;
        in.data[in.len] = '\0';
        head_end = strstr(in.data, "\r\n\r\n");
        if (!head_end && in.len > 65536) goto done;
    }
    size_t head_len = (size_t)(head_end - in.data) + 4;
    *head_end = '\0';

    char method[16], target[2048];
    if (sscanf(in.data, "%15s %2047s", method, target) != 2) {
        respond_error(fd, 400, "bad request line");
        goto done;
    }
    long long content_length = 0;
    bool expect_continue = false, chunked = false;
    for (char *line = strstr(in.data, "\r\n"); line; line = strstr(line, "\r\n")) {
        line += 2;
        if (!strncasecmp(line, "content-length:", 15)) content_length = strtoll(line + 15, NULL, 10);
        else if (!strncasecmp(line, "expect:", 7) && strcasestr(line, "100-continue")) expect_continue = true;
        else if (!strncasecmp(line, "transfer-encoding:", 18) && strcasestr(line, "chunked")) chunked = true;
    }
    if (chunked) {
        respond_error(fd, 411, "send a Content-Length");
        goto done;
    }
    if (content_length < 0 || content_length > MAX_REQUEST) {
        respond_error(fd, 413, "body too large");
        goto done;
    }
    if (expect_continue) send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    size_t want = head_len + (size_t)content_length;
    while (in.len < want) {
        sbuf_reserve(&in, want - in.len);
        ssize_t n = recv(fd, in.data + in.len, want - in.len, 0);
        if (n <= 0) goto done;
        in.len += (size_t)n;
    }
    in.data[want] = '\0';
    const char *body = in.data + head_len;

    char *query = strchr(target, '?');
    if (query) *query++ = '\0';
    if (!strcmp(method, "GET")) handle_get(fd, target, query);
    else if (!strcmp(method, "POST")) handle_post(fd, target, body, (size_t)content_length);
    else respond_error(fd, 405, "GET or POST");
done:
    sbuf_free(&in);
}

void control_serve(int listen_fd, int signal_fd) {
    struct pollfd fds[2] = {{.fd = listen_fd, .events = POLLIN}, {.fd = signal_fd, .events = POLLIN}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (fds[1].revents) return; /* SIGTERM or SIGINT */
        if (fds[0].revents & POLLIN) {
            int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0) continue;
            serve_one(fd);
            shutdown(fd, SHUT_WR);
            close(fd);
        }
    }
}
