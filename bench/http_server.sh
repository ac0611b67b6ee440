#!/usr/bin/env bash
# HTTP server throughput: BuzzKitHTTPServer (full Router + envelope path, async handler and sync
# route) against a raw C libmicrohttpd server with the same flags and 2 threads, measured in the
# same run with wrk (-t2 -c64 -d10s, keep-alive, loopback) one after the other.
# Usage: bench/http_server.sh [duration, default 10s]. Stops everything it starts.
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

DURATION="${1:-10s}"
command -v wrk >/dev/null || { bk_log "installing wrk"; apt-get install -y -qq wrk >/dev/null; }
command -v gcc >/dev/null || bk_die "gcc is required for the C baseline"

WORK="$(mktemp -d /tmp/bk-http-bench.XXXXXX)"
PIDS=()
cleanup() {
  bench_stop_pids
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bk_log "building buzzkit-bench (release)"
BENCH="$(bench_release_build .build-release-bench buzzkit-bench)/buzzkit-bench"
bk_log "compiling the C baseline"
gcc -O2 -o "$WORK/mhd_hello" bench/baseline/mhd_hello.c -lmicrohttpd

wait_port() {
  for _ in $(seq 1 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$1/hello" && return 0
    sleep 0.1
  done
  bk_die "server on port $1 did not come up"
}

# run_wrk NAME PORT: prints requests/s
run_wrk() {
  local out rps
  out="$(wrk -t2 -c64 -d"$DURATION" "http://127.0.0.1:$2/hello")"
  echo "$out" >"$WORK/wrk-$1.txt"
  if grep -q "Non-2xx" <<<"$out"; then bk_log "$1: non-2xx responses!"; grep "Non-2xx" <<<"$out" >&2; fi
  rps="$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")"
  echo "$rps"
}

# serve NAME PORT COMMAND...: starts, measures, stops; prints requests/s
measure() {
  local name="$1" port="$2"; shift 2
  "$@" >"$WORK/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  wait_port "$port"
  # Warm up (page faults, JIT-free but caches and connection setup).
  wrk -t2 -c64 -d2s "http://127.0.0.1:$port/hello" >/dev/null
  local rps
  rps="$(run_wrk "$name" "$port")"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$rps"
}

P1="$(bk_free_port)"; C_RPS="$(measure c "$P1" "$WORK/mhd_hello" "$P1" 2)"
P2="$(bk_free_port)"; ASYNC_RPS="$(measure swift-async "$P2" "$BENCH" http-server --port "$P2" --mode async)"
P3="$(bk_free_port)"; SYNC_RPS="$(measure swift-sync "$P3" "$BENCH" http-server --port "$P3" --mode sync)"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", 100 * a / b }'; }
echo "wrk -t2 -c64 -d$DURATION, GET /hello, keep-alive, loopback, libmicrohttpd 2 threads"
printf '%-34s %12s req/s\n' "C libmicrohttpd (baseline)" "$C_RPS"
printf '%-34s %12s req/s  (%s of C)\n' "Swift Router, async handler" "$ASYNC_RPS" "$(ratio "$ASYNC_RPS" "$C_RPS")"
printf '%-34s %12s req/s  (%s of C)\n' "Swift Router, sync route" "$SYNC_RPS" "$(ratio "$SYNC_RPS" "$C_RPS")"
echo "goal: Swift/C >= 70%"
