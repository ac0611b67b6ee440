/*
 * apns-sim: command line, start-up and shutdown.
 *
 *   apns-sim --port N --cert cert.pem --key key.pem [--control-port M] [--threads T]
 *            [--keys-dir DIR] [--key KEYID=TEAMID:key.pem ...] [--record-limit N] [--no-record]
 *            [--host 127.0.0.1]
 *
 * --key is given twice in two meanings: a plain path is the TLS private key, KEYID=TEAMID:path
 * registers a provider key. Port 0 picks a free port; the ready line tells which:
 *   apns-sim listening on 127.0.0.1:N control 127.0.0.1:M
 * SIGTERM / SIGINT stop it cleanly (exit 0).
 */
#include "sim.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

static void usage(void) {
    fprintf(stderr,
            "usage: apns-sim --port N --cert cert.pem --key key.pem [--control-port M] [--threads T]\n"
            "                [--keys-dir DIR] [--key KEYID=TEAMID:pubkey.pem ...] [--record-limit N]\n"
            "                [--no-record] [--host 127.0.0.1]\n"
            "  provider key files in --keys-dir are named <KEYID>.<TEAMID>.pem (public or private PEM)\n");
}

static bool parse_int(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *cert = NULL, *tls_key = NULL, *keys_dir = NULL;
    long long port = -1, control_port = 0, threads = sysconf(_SC_NPROCESSORS_ONLN), record_limit = 1000000;
    bool record = true;
    char err[512];
    const char *provider_keys[256];
    int nprovider = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (!strcmp(a, "--no-record")) { record = false; continue; }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(); return 0; }
        if (!v) { usage(); return 2; }
        i++;
        if (!strcmp(a, "--port")) ok = parse_int(v, 0, 65535, &port);
        else if (!strcmp(a, "--control-port")) ok = parse_int(v, 0, 65535, &control_port);
        else if (!strcmp(a, "--threads")) ok = parse_int(v, 1, 64, &threads);
        else if (!strcmp(a, "--record-limit")) ok = parse_int(v, 0, 1000000000LL, &record_limit);
        else if (!strcmp(a, "--cert")) cert = v;
        else if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--keys-dir")) keys_dir = v;
        else if (!strcmp(a, "--key")) {
            if (strchr(v, '=') && strchr(v, ':')) {
                if (nprovider == 256) ok = false;
                else provider_keys[nprovider++] = v;
            } else {
                tls_key = v;
            }
        } else {
            fprintf(stderr, "apns-sim: unknown option %s\n", a);
            usage();
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "apns-sim: bad value for %s: %s\n", a, v);
            return 2;
        }
    }
    if (port < 0 || !cert || !tls_key) {
        usage();
        return 2;
    }
    if (threads < 1) threads = 1;

    for (int i = 0; i < nprovider; i++) {
        /* KEYID=TEAMID:path */
        char spec[4096];
        snprintf(spec, sizeof spec, "%s", provider_keys[i]);
        char *eq = strchr(spec, '='), *colon = eq ? strchr(eq, ':') : NULL;
        if (!eq || !colon) {
            fprintf(stderr, "apns-sim: --key expects KEYID=TEAMID:path, got %s\n", provider_keys[i]);
            return 2;
        }
        *eq = '\0';
        *colon = '\0';
        if (keys_add_file(spec, eq + 1, colon + 1, err, sizeof err) != 0) {
            fprintf(stderr, "apns-sim: provider key %s: %s\n", spec, err);
            return 1;
        }
    }
    if (keys_dir && keys_load_dir(keys_dir, err, sizeof err) != 0) {
        fprintf(stderr, "apns-sim: %s\n", err);
        return 1;
    }

    /* Block the stop signals in every thread (workers inherit the mask); the main thread reads
       them through a signalfd while it serves the control port. SIGPIPE is ignored: a peer that
       vanishes mid-write is an ordinary event here. */
    signal(SIGPIPE, SIG_IGN);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);

    state_config sc = {.record = record, .record_limit = (size_t)record_limit};
    state_init(&sc);

    SSL_CTX *ctx = tls_context(cert, tls_key, err, sizeof err);
    if (!ctx) {
        fprintf(stderr, "apns-sim: %s\n", err);
        return 1;
    }
    int bound_control = 0;
    int cfd = control_listen(host, (int)control_port, &bound_control);
    if (cfd < 0) {
        fprintf(stderr, "apns-sim: cannot listen on control port %s:%lld\n", host, control_port);
        return 1;
    }
    server_config cfg = {.host = host, .port = (int)port, .threads = (int)threads};
    int bound = server_start(&cfg, ctx, err, sizeof err);
    if (bound < 0) {
        fprintf(stderr, "apns-sim: %s\n", err);
        return 1;
    }
    printf("apns-sim listening on %s:%d control %s:%d\n", host, bound, host, bound_control);
    fflush(stdout);

    control_serve(cfd, sfd);

    server_stop();
    close(cfd);
    close(sfd);
    SSL_CTX_free(ctx);
    state_free();
    keys_free_all();
    fprintf(stderr, "apns-sim: stopped\n");
    return 0;
}
