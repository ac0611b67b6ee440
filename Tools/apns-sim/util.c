/* Small helpers: clock, UUIDs, hex checks, growable buffers, JSON string escaping. */
#include "sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* UUIDs are generated for every response without apns-id, so they must be cheap: a per-thread
   xorshift generator seeded once from the kernel. They only need to be unique, not secret. */
static uint64_t next_random(void) {
    static __thread uint64_t s[2];
    static __thread bool seeded;
    if (!seeded) {
        if (getrandom(s, sizeof s, 0) != (ssize_t)sizeof s) {
            s[0] = (uint64_t)now_ms() ^ (uint64_t)(uintptr_t)&s;
            s[1] = 0x9E3779B97F4A7C15ull;
        }
        if (!(s[0] | s[1])) s[1] = 1;
        seeded = true;
    }
    uint64_t a = s[0], b = s[1];
    s[0] = b;
    a ^= a << 23;
    s[1] = a ^ b ^ (a >> 17) ^ (b >> 26);
    return s[1] + b;
}

void uuid_v4(char out[37]) {
    static const char hex[] = "0123456789ABCDEF";
    uint8_t bytes[16];
    uint64_t r0 = next_random(), r1 = next_random();
    memcpy(bytes, &r0, 8);
    memcpy(bytes + 8, &r1, 8);
    bytes[6] = (uint8_t)((bytes[6] & 0x0F) | 0x40);
    bytes[8] = (uint8_t)((bytes[8] & 0x3F) | 0x80);
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[bytes[i] >> 4];
        out[o++] = hex[bytes[i] & 15];
    }
    out[36] = '\0';
}

static bool hexdigit(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool is_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!hexdigit(s[i])) return false;
    return true;
}

/* 8-4-4-4-12 hexadecimal digits, either case (APNs documents lower-case, accepts both). */
bool is_uuid(const char *s, size_t n) {
    if (n != 36) return false;
    for (size_t i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return false;
        } else if (!hexdigit(s[i])) {
            return false;
        }
    }
    return true;
}

void sbuf_init(sbuf *b) {
    b->data = NULL;
    b->len = b->cap = 0;
}

void sbuf_free(sbuf *b) {
    free(b->data);
    sbuf_init(b);
}

void sbuf_reserve(sbuf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        fprintf(stderr, "apns-sim: out of memory\n");
        abort();
    }
    b->data = d;
    b->cap = cap;
}

void sbuf_add(sbuf *b, const void *p, size_t n) {
    sbuf_reserve(b, n);
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sbuf_adds(sbuf *b, const char *s) { sbuf_add(b, s, strlen(s)); }

void sbuf_addf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        sbuf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void sbuf_add_json_str(sbuf *b, const char *p, size_t n) {
    static const char hex[] = "0123456789abcdef";
    sbuf_reserve(b, n + 2);
    sbuf_add(b, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        sbuf_add(b, p + start, i - start);
        start = i + 1;
        switch (c) {
        case '"': sbuf_add(b, "\\\"", 2); break;
        case '\\': sbuf_add(b, "\\\\", 2); break;
        case '\n': sbuf_add(b, "\\n", 2); break;
        case '\r': sbuf_add(b, "\\r", 2); break;
        case '\t': sbuf_add(b, "\\t", 2); break;
        default: {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            sbuf_add(b, e, 6);
        }
        }
    }
    sbuf_add(b, p + start, n - start);
    sbuf_add(b, "\"", 1);
}
