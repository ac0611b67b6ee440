/*
 * Strict JSON validation (RFC 8259) without building a tree: APNs rejects payloads that are not
 * JSON, and the simulator must answer for each request without allocating. A recursive-descent
 * walk with a depth limit; strings are checked for valid UTF-8 and escapes.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256

typedef struct {
    const unsigned char *p, *end;
    int depth;
} jparser;

static void skip_ws(jparser *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static bool hex4(const unsigned char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return false;
    }
    *out = v;
    return true;
}

/* One UTF-8 sequence starting at p (first byte >= 0x80); returns its length or 0 if invalid
   (overlong forms, surrogates and code points above U+10FFFF are rejected). */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    size_t n;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
    if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
    return n;
}

static bool parse_string(jparser *j) {
    if (j->p >= j->end || *j->p != '"') return false;
    j->p++;
    while (j->p < j->end) {
        unsigned char c = *j->p;
        if (c == '"') { j->p++; return true; }
        if (c < 0x20) return false;
        if (c == '\\') {
            if (j->end - j->p < 2) return false;
            unsigned char e = j->p[1];
            if (e == 'u') {
                unsigned v;
                if (j->end - j->p < 6 || !hex4(j->p + 2, &v)) return false;
                j->p += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                j->p += 2;
            } else {
                return false;
            }
        } else if (c >= 0x80) {
            size_t n = utf8_seq(j->p, j->end);
            if (!n) return false;
            j->p += n;
        } else {
            j->p++;
        }
    }
    return false;
}

static bool digits(jparser *j) {
    const unsigned char *s = j->p;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    return j->p > s;
}

static bool parse_number(jparser *j) {
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end) return false;
    if (*j->p == '0') j->p++;
    else if (!digits(j)) return false;
    if (j->p < j->end && *j->p == '.') { j->p++; if (!digits(j)) return false; }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (!digits(j)) return false;
    }
    return true;
}

static bool literal(jparser *j, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0) return false;
    j->p += n;
    return true;
}

static bool parse_value(jparser *j);

static bool parse_object(jparser *j) {
    j->p++; /* '{' */
    skip_ws(j);
    if (j->p < j->end && *j->p == '}') { j->p++; return true; }
    for (;;) {
        skip_ws(j);
        if (!parse_string(j)) return false;
        skip_ws(j);
        if (j->p >= j->end || *j->p != ':') return false;
        j->p++;
        if (!parse_value(j)) return false;
        skip_ws(j);
        if (j->p >= j->end) return false;
        if (*j->p == ',') { j->p++; continue; }
        if (*j->p == '}') { j->p++; return true; }
        return false;
    }
}

static bool parse_array(jparser *j) {
    j->p++; /* '[' */
    skip_ws(j);
    if (j->p < j->end && *j->p == ']') { j->p++; return true; }
    for (;;) {
        if (!parse_value(j)) return false;
        skip_ws(j);
        if (j->p >= j->end) return false;
        if (*j->p == ',') { j->p++; continue; }
        if (*j->p == ']') { j->p++; return true; }
        return false;
    }
}

static bool parse_value(jparser *j) {
    skip_ws(j);
    if (j->p >= j->end) return false;
    bool ok;
    switch (*j->p) {
    case '{':
    case '[':
        if (++j->depth > MAX_DEPTH) return false;
        ok = *j->p == '{' ? parse_object(j) : parse_array(j);
        j->depth--;
        return ok;
    case '"': return parse_string(j);
    case 't': return literal(j, "true");
    case 'f': return literal(j, "false");
    case 'n': return literal(j, "null");
    default: return parse_number(j);
    }
}

json_kind json_check(const char *p, size_t n) {
    jparser j = {(const unsigned char *)p, (const unsigned char *)p + n, 0};
    skip_ws(&j);
    bool object = j.p < j.end && *j.p == '{';
    if (!parse_value(&j)) return JSON_INVALID;
    skip_ws(&j);
    if (j.p != j.end) return JSON_INVALID;
    return object ? JSON_OBJECT : JSON_OTHER;
}

/* Appends the UTF-8 form of code point cp; false when it does not fit. */
static bool put_utf8(char *out, size_t cap, size_t *o, unsigned cp) {
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) { b[0] = (unsigned char)cp; n = 1; }
    else if (cp < 0x800) { b[0] = (unsigned char)(0xC0 | (cp >> 6)); b[1] = (unsigned char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12)); b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (cp >> 18)); b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (unsigned char)(0x80 | (cp & 0x3F)); n = 4;
    }
    if (*o + n >= cap) return false;
    memcpy(out + *o, b, n);
    *o += n;
    return true;
}

bool json_string(const char *val, size_t vlen, char *out, size_t cap, size_t *outlen) {
    if (vlen < 2 || val[0] != '"' || val[vlen - 1] != '"' || cap == 0) return false;
    size_t o = 0;
    for (size_t i = 1; i < vlen - 1; i++) {
        char c = val[i];
        if (c != '\\') {
            if (o + 1 >= cap) return false;
            out[o++] = c;
            continue;
        }
        char e = val[++i];
        unsigned cp;
        switch (e) {
        case 'n': cp = '\n'; break;
        case 't': cp = '\t'; break;
        case 'r': cp = '\r'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'u':
            if (!hex4((const unsigned char *)val + i + 1, &cp)) return false;
            i += 4;
            /* A high surrogate followed by \uDC00-\uDFFF forms one code point. */
            if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < vlen && val[i + 1] == '\\' && val[i + 2] == 'u') {
                unsigned lo;
                if (hex4((const unsigned char *)val + i + 3, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            break;
        default: cp = (unsigned char)e;
        }
        if (!put_utf8(out, cap, &o, cp)) return false;
    }
    out[o] = '\0';
    if (outlen) *outlen = o;
    return true;
}

bool json_member(const char *p, size_t n, const char *key, const char **val, size_t *vlen) {
    jparser j = {(const unsigned char *)p, (const unsigned char *)p + n, 0};
    skip_ws(&j);
    if (j.p >= j.end || *j.p != '{') return false;
    j.p++;
    size_t keylen = strlen(key);
    for (;;) {
        skip_ws(&j);
        if (j.p >= j.end || *j.p != '"') return false;
        const unsigned char *ks = j.p;
        if (!parse_string(&j)) return false;
        char kbuf[256];
        size_t klen = 0;
        bool match = json_string((const char *)ks, (size_t)(j.p - ks), kbuf, sizeof kbuf, &klen) &&
                     klen == keylen && memcmp(kbuf, key, keylen) == 0;
        skip_ws(&j);
        if (j.p >= j.end || *j.p != ':') return false;
        j.p++;
        skip_ws(&j);
        const unsigned char *vs = j.p;
        if (!parse_value(&j)) return false;
        if (match) {
            *val = (const char *)vs;
            *vlen = (size_t)(j.p - vs);
            return true;
        }
        skip_ws(&j);
        if (j.p < j.end && *j.p == ',') { j.p++; continue; }
        return false;
    }
}

bool json_int(const char *val, size_t vlen, long long *out) {
    if (vlen == 0 || vlen > 20) return false;
    char buf[24];
    memcpy(buf, val, vlen);
    buf[vlen] = '\0';
    size_t i = buf[0] == '-' ? 1 : 0;
    if (i >= vlen) return false;
    for (; i < vlen; i++)
        if (buf[i] < '0' || buf[i] > '9') return false;
    char *end;
    *out = strtoll(buf, &end, 10);
    return *end == '\0';
}
