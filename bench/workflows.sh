#!/usr/bin/env bash
# Workflows: (1) wake-up lateness of due runs among many waiting ones, against a bare
# `UPDATE … FOR UPDATE SKIP LOCKED` claim loop of the same schedule; (3) trigger events on
# bk:events to runs started, against a bare consumer inserting one row per event. Same run, same
# machine, durable settings (fsync on).
# Usage: bench/workflows.sh [runs] [rate] [seconds] [trigger-events]
#   defaults 1000000 2000 60 200000 (bounded; stops everything it starts)
# Not measured here yet: (2) 100,000 runs due in one second each sending through the simulator.
# Release binaries go to $BUZZKIT_BENCH_SCRATCH (default .build-release-bench).
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

RUNS="${1:-1000000}"
RATE="${2:-2000}"
SECONDS_DUE="${3:-60}"
TRIGGERS="${4:-200000}"
RUN_DIR="$(mktemp -d /tmp/buzzkit-bench-workflows.XXXXXX)"
chmod 755 "$RUN_DIR"
cleanup() { bk_stop_postgres "$RUN_DIR/pg"; bk_stop_redis "$RUN_DIR/redis"; rm -rf "$RUN_DIR"; }
trap cleanup EXIT

bk_log "building workflow (release)"
WORKFLOW="$(bench_release_build "${BUZZKIT_BENCH_SCRATCH:-.build-release-bench}" workflow)/workflow"

bench_migrated_databases "$RUN_DIR"

bk_log "workflows: $RUNS waiting runs, $RATE due per second for $SECONDS_DUE s; then $TRIGGERS trigger events"
OUT="$(timeout 1800 "$WORKFLOW" bench --postgres "$PG_URL" --redis "$REDIS_URL" \
  --runs "$RUNS" --rate "$RATE" --seconds "$SECONDS_DUE" --trigger-events "$TRIGGERS")"
echo "$OUT"
python3 - "$OUT" <<'PY'
import sys
lines = dict((l.split(" ", 1)[0], l.split(" ", 1)[1]) for l in sys.argv[1].splitlines() if " " in l)
n, p50, p99, mx = (float(x) for x in lines["lateness_workflow"].split())
rn, rp50, rp99, rmx = (float(x) for x in lines["lateness_raw"].split())
print(f"wake-up lateness, workflow runs ({int(n):,} fired): p50 {p50*1000:.0f} ms  p99 {p99*1000:.0f} ms  max {mx*1000:.0f} ms")
print(f"wake-up lateness, bare claim loop ({int(rn):,}):  p50 {rp50*1000:.0f} ms  p99 {rp99*1000:.0f} ms  max {rmx*1000:.0f} ms")
if n < 1 or p99 < 0:
    print("wake-up lateness: NOT measured (no run fired)")
else:
    print(f"p99 ratio to the bare loop: {p99 / rp99 if rp99 > 0 else float('inf'):.2f}; goal p99 < 1 s: {'met' if p99 < 1 else 'NOT met'}")
rate, raw = float(lines["triggers_rate"]), float(lines["triggers_raw_rate"])
print(f"trigger events to runs started: {rate:,.0f} runs/s; bare consumer {raw:,.0f} rows/s; ratio {rate / raw:.2f}")
print(f"goal >= 20,000 runs started/s: {'met' if rate >= 20000 else 'NOT met'}")
PY
