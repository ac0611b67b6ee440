#!/usr/bin/env bash
# Where an apns-sender's CPU goes, by instructions (valgrind --tool=callgrind), immune to the
# noise of other work on the machine (perf's hardware counters are not available on these VMs):
# the send-path stack of bench/sender_stack.sh with ONE replica, run under callgrind, a topic of
# DEVICES devices, one message, instrumentation on from the POST to the last ledger row.
# Per entry of BK_PROFILE_TRANSPORTS (default "nghttp2"; "curl" only for an older build's
# libcurl client) it prints instructions per delivery, their split by library (the sender's own Swift
# code, Swift runtime and Foundation, libcurl, nghttp2, OpenSSL, libpq, hiredis, libc, the kernel
# entry points not counted) and the top functions by inclusive cost; the callgrind files are kept
# in BK_PROFILE_OUT (default /tmp/bk-sender-profile) for callgrind_annotate.
# Usage: bench/sender_profile.sh [devices, default 5000]. Knobs: BK_BIN_DIR, BK_PUSH_NO_BUILD (see
# bench/sender_stack.sh). Under callgrind the replica runs about 50x slower; 5,000 devices take a
# minute or two per transport.
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sender_stack.sh"
cd "$BK_ROOT"

DEVICES="${1:-5000}"
TRANSPORTS="${BK_PROFILE_TRANSPORTS:-nghttp2}"
OUT="${BK_PROFILE_OUT:-/tmp/bk-sender-profile}"
command -v valgrind >/dev/null || bk_die "valgrind missing (apt-get install valgrind)"
mkdir -p "$OUT"
stack_start sender-profile
bk_log "inserting a topic of $DEVICES devices"
stack_devices u "$DEVICES" everyone
for r in a b; do kill "${SENDER_PID[$r]}" 2>/dev/null || true; wait "${SENDER_PID[$r]}" 2>/dev/null || true; done
unset 'SENDER_PID[b]'

for transport in $TRANSPORTS; do
  bk_log "$transport: one replica under callgrind, $DEVICES deliveries ($(bench_load_note))"
  rm -f "$OUT/callgrind.$transport".*
  BK_SENDER_WRAPPER="valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$OUT/callgrind.$transport.%p" \
    BK_SENDER_ENV="BUZZKIT_APNS_TRANSPORT=$transport BUZZKIT_APNS_REQUEST_TIMEOUT=60s" stack_start_replica a
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:${SENDER_PORT[a]}/readyz" >/dev/null && break; sleep 0.2; done
  sleep 2
  callgrind_control -i on "${SENDER_PID[a]}" >/dev/null
  BEFORE="$(stack_sim_accepted)"
  ID="$(stack_post '{"topic":"everyone","title":"Hello","body":"A benchmark push to everyone","data":{"k":1}}')"
  stack_wait_done "message_id = '$ID'" "$DEVICES" 1800 "$BEFORE"
  callgrind_control -i off "${SENDER_PID[a]}" >/dev/null
  callgrind_control -d "${SENDER_PID[a]}" >/dev/null
  kill "${SENDER_PID[a]}"; wait "${SENDER_PID[a]}" 2>/dev/null || true
  SENT="$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE message_id = '$ID' AND status = 'sent'")"
  # Every dump of the run (the explicit one and the one at exit) summed.
  python3 - "$transport" "$DEVICES" "$SENT" "$OUT" <<'PY'
import collections, glob, re, subprocess, sys
transport, devices, sent, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
files = sorted(glob.glob("%s/callgrind.%s.*" % (out, transport)))
by_object = collections.Counter()
inclusive = collections.Counter()
total = 0
for f in files:
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", f],
                          capture_output=True, text=True).stdout
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+) \([^)]*\)\s+(.*?)(?: \[(.*)\])?$", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        what, obj = m.group(2), m.group(3) or ""
        if what.startswith("PROGRAM TOTALS"):
            total += ir
            continue
        by_object[obj] += ir
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=yes", f],
                          capture_output=True, text=True).stdout
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+) \([^)]*\)\s+(.*?)(?: \[(.*)\])?$", line)
        if m and not m.group(2).startswith("PROGRAM TOTALS"):
            inclusive[m.group(2)] += int(m.group(1).replace(",", ""))

def group(obj):
    name = obj.rsplit("/", 1)[-1]
    for key, label in (("libcurl", "libcurl"), ("libnghttp2", "nghttp2"), ("libssl", "OpenSSL"),
                       ("libcrypto", "OpenSSL"), ("libpq", "libpq"), ("libhiredis", "hiredis"),
                       ("libc.so", "libc"), ("libc-", "libc"), ("libswiftCore", "Swift runtime"),
                       ("libFoundation", "Foundation"), ("libswift", "Swift runtime"),
                       ("libdispatch", "Swift runtime"), ("ld-linux", "loader"), ("vgpreload", "valgrind")):
        if key in name:
            return label
    return "apns-sender (Swift code)" if name == "apns-sender" else (name or "?")

groups = collections.Counter()
for obj, ir in by_object.items():
    groups[group(obj)] += ir
print("%s: %d deliveries (%d sent), %.0f instructions per delivery" % (transport, devices, sent, total / devices))
for label, ir in groups.most_common():
    if ir / total >= 0.005:
        print("  %-26s %8.0f per delivery  %5.1f%%" % (label, ir / devices, 100.0 * ir / total))
print("  top functions, inclusive (per delivery):")
for name, ir in inclusive.most_common(25):
    print("    %9.0f  %s" % (ir / devices, name[:150]))
PY
done
