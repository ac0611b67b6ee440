#!/usr/bin/env bash
# Gateway auth overhead: the trivial endpoint (GET /healthz, answered on the network thread)
# against an authenticated GET /v1/subscribers/{id} and PUT /v1/subscribers/{id} (tenant key:
# cached auth, Redis token bucket, tenant resolution, one Postgres statement), measured in the
# same run with wrk -t2 -c64 (keep-alive, loopback). Prints req/s, p99 and the ratio to /healthz,
# and for PUT its share of the ceiling durable commits allow (64 x the disk's 8 kB O_DSYNC writes/s,
# measured in the same run: each PUT waits for at least one WAL flush), the CPU each request cost
# the machine, the gateway and Postgres, and the share of /healthz a PUT could keep at best given
# the Postgres CPU it needs.
# The rate limit is set high enough not to refuse the benchmark's single key, but it runs.
# Usage: bench/gateway_auth.sh [duration, default 8s]. Stops everything it starts.
# BUZZKIT_BENCH_ROUNDS: how many times the four measurements alternate (default 3; medians reported).
# BUZZKIT_BENCH_SCRATCH: the release build's scratch path (default .build-release-gateway).
# BUZZKIT_BENCH_SKIP_BUILD=1: run the binaries already built there.
# BUZZKIT_BENCH_PERF=<file>: record the gateway with `perf record -g` during one run
# (BUZZKIT_BENCH_PERF_ON=get|put|healthz|auth-only, default get; BUZZKIT_BENCH_PERF_ALL=1: whole system;
# BUZZKIT_BENCH_PERF_ARGS: perf's call-graph options instead of -g, e.g. "--call-graph dwarf,16384").
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

DURATION="${1:-8s}"
command -v wrk >/dev/null || { bk_log "installing wrk"; apt-get install -y -qq wrk >/dev/null; }

WORK="$(mktemp -d /tmp/bk-gateway-bench.XXXXXX)"
chmod 755 "$WORK"
GATEWAY_PID=""
cleanup() {
  [ -n "$GATEWAY_PID" ] && { kill "$GATEWAY_PID" 2>/dev/null || true; wait "$GATEWAY_PID" 2>/dev/null || true; }
  bk_stop_postgres "$WORK/pg"
  bk_stop_redis "$WORK/redis"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bk_log "building gateway and buzzkit-admin (release)"
SCRATCH="${BUZZKIT_BENCH_SCRATCH:-.build-release-gateway}"
if [ -z "${BUZZKIT_BENCH_SKIP_BUILD:-}" ]; then
  swift build -c release --product gateway --scratch-path "$SCRATCH" >/dev/null
  swift build -c release --product buzzkit-admin --scratch-path "$SCRATCH" >/dev/null
fi
BIN="$(swift build -c release --show-bin-path --scratch-path "$SCRATCH")"

PG_PORT="$(bk_free_port)"; REDIS_PORT="$(bk_free_port)"; HTTP_PORT="$(bk_free_port)"
bk_start_postgres "$WORK/pg" "$PG_PORT"
bk_start_redis "$WORK/redis" "$REDIS_PORT"
export BUZZKIT_DATABASE_URL="postgres://buzzkit@127.0.0.1:$PG_PORT/buzzkit"
export BUZZKIT_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
export BUZZKIT_SECRET_KEY="$(openssl rand -base64 32)"
export BUZZKIT_HTTP_PORT="$HTTP_PORT" BUZZKIT_LOG_LEVEL=warning BUZZKIT_DB_POOL_SIZE="${BUZZKIT_DB_POOL_SIZE:-8}"
export BUZZKIT_RATE_LIMIT_RPS=1000000 BUZZKIT_RATE_LIMIT_BURST=10000000

"$BIN/buzzkit-admin" migrate
eval "$("$BIN/buzzkit-admin" bootstrap --workspace bench --demo-tenant bench-app)"
"$BIN/gateway" >"$WORK/gateway.log" 2>&1 &
GATEWAY_PID=$!
up=""
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$HTTP_PORT/healthz" && { up=1; break; }; sleep 0.1; done
[ -n "$up" ] || { tail -20 "$WORK/gateway.log" >&2; bk_die "the gateway did not come up"; }
BASE="http://127.0.0.1:$HTTP_PORT"
curl -sf -o /dev/null -X PUT -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" -H 'Content-Type: application/json' \
  -d '{"attributes":{"plan":"pro"},"timezone":"Europe/Berlin"}' "$BASE/v1/subscribers/bench-user" \
  || bk_die "creating the subscriber failed (see $WORK/gateway.log)"

cat >"$WORK/get.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $BUZZKIT_TENANT_KEY"
LUA
cat >"$WORK/put.lua" <<LUA
-- 1000 subscribers, picked at random, so the benchmark measures the route, not one row's lock.
local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer $BUZZKIT_TENANT_KEY" }
local body = '{"attributes":{"plan":"pro","seats":3},"locale":"en-US"}'
request = function()
  return wrk.format("PUT", "/v1/subscribers/bench-" .. math.random(1, 1000), headers, body)
end
LUA
cat >"$WORK/scope.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $BUZZKIT_CLIENT_KEY"
LUA

# measure NAME URL [LUA]: prints "rps p99 machine gateway postgres": the CPU each request cost the
# whole machine (wrk included), the gateway and Postgres, in microseconds.
measure() {
  local name="$1" url="$2" script="${3:-}" args=() out rps p99 before after
  [ -n "$script" ] && args=(-s "$script")
  wrk -t2 -c64 -d2s "${args[@]}" "$url" >/dev/null   # warm-up
  local perf_pid=""
  if [ -n "${BUZZKIT_BENCH_PERF:-}" ] && [ "${BUZZKIT_BENCH_PERF_ON:-get}" = "$name" ]; then
    perf record ${BUZZKIT_BENCH_PERF_ARGS:--g} -o "$BUZZKIT_BENCH_PERF" $([ -n "${BUZZKIT_BENCH_PERF_ALL:-}" ] && echo -a || echo -p "$GATEWAY_PID") \
      >/dev/null 2>&1 </dev/null & perf_pid=$!
  fi
  local threads_before threads_after
  threads_before="$(bench_thread_ticks "$GATEWAY_PID" MHD-)"
  before="$(bench_machine_ticks) $(bench_ticks "$GATEWAY_PID") $(bench_ticks $(bench_pg_pids "$WORK/pg/data"))"
  out="$(wrk -t2 -c64 -d"$DURATION" --latency "${args[@]}" "$url")"
  after="$(bench_machine_ticks) $(bench_ticks "$GATEWAY_PID") $(bench_ticks $(bench_pg_pids "$WORK/pg/data"))"
  threads_after="$(bench_thread_ticks "$GATEWAY_PID" MHD-)"
  [ -n "$perf_pid" ] && { kill -INT "$perf_pid"; wait "$perf_pid" || true; }
  echo "$out" >"$WORK/wrk-$name.txt"
  if grep -q "Non-2xx" <<<"$out"; then bk_log "$name: non-2xx responses!"; grep "Non-2xx" <<<"$out" >&2; fi
  rps="$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")"
  p99="$(awk '$1 == "99%" {print $2}' <<<"$out")"
  awk -v rps="$rps" -v p99="$p99" -v b="$before" -v a="$after" -v n="$(awk '/requests in/ {print $1}' <<<"$out")" \
      -v tb="$threads_before" -v ta="$threads_after" 'BEGIN {
    split(b, x, " "); split(a, y, " ")
    printf "%s %s", rps, p99
    for (i = 1; i <= 3; i++) printf " %.1f", (n > 0 ? (y[i] - x[i]) * 10000 / n : 0)
    # each network thread'"'"'s share of their CPU, e.g. 52/48
    k = split(tb, u, ","); split(ta, v, ","); total = 0
    for (i = 1; i <= k; i++) total += v[i] - u[i]
    split_text = ""
    for (i = 1; i <= k; i++) split_text = split_text (i > 1 ? "/" : "") sprintf("%.0f", total > 0 ? 100 * (v[i] - u[i]) / total : 0)
    print " " (split_text == "" ? "-" : split_text)
  }'
}

# Rounds alternate the four measurements, so a noisy neighbour slows each of them alike; the
# summary is each figure's median over the rounds, and each ratio is taken within its round.
ROUNDS="${BUZZKIT_BENCH_ROUNDS:-3}"
: >"$WORK/rounds.txt"
for round in $(seq 1 "$ROUNDS"); do
  echo "$round healthz $(measure healthz "$BASE/healthz")" >>"$WORK/rounds.txt"
  echo "$round get $(measure get "$BASE/v1/subscribers/bench-user" "$WORK/get.lua")" >>"$WORK/rounds.txt"
  echo "$round put $(measure put "$BASE/v1/subscribers/bench-user" "$WORK/put.lua")" >>"$WORK/rounds.txt"
  echo "$round auth-only $(measure auth-only "$BASE/v1/subscribers/bench-user" "$WORK/scope.lua" 2>/dev/null)" >>"$WORK/rounds.txt"
done

# The PUT ceiling durable commits allow: every PUT waits for at least one WAL flush, so 64
# connections get at most 64 requests per flush. One flush ~ one 8 kB O_DSYNC write on the disk
# that holds the cluster, measured here (500 of them).
SYNC_S="$(dd if=/dev/zero of="$WORK/pg/dsync.test" bs=8k count=500 oflag=dsync 2>&1 | awk '/copied/ { print $(NF-3) }')"
rm -f "$WORK/pg/dsync.test"
echo "wrk -t2 -c64 -d$DURATION, keep-alive, loopback; gateway release build, 2 HTTP threads, Postgres pool $BUZZKIT_DB_POOL_SIZE (durable commits); $ROUNDS rounds"
python3 - "$WORK/rounds.txt" "$SYNC_S" <<'PY'
import statistics, sys
from collections import defaultdict
rows = defaultdict(dict)  # round -> name -> (rps, p99, machine, gateway, postgres)
for line in open(sys.argv[1]):
    r, name, rps, p99, *cpu, split = line.split()
    rows[r][name] = (float(rps), p99, *map(float, cpu), split)
names = ["healthz", "get", "put", "auth-only"]
labels = {"healthz": "GET /healthz (trivial baseline)", "get": "GET /v1/subscribers/{id} (tenant key)",
          "put": "PUT /v1/subscribers/{id} (tenant key)", "auth-only": "auth + rate limit only (403 by scope)"}
med = lambda values: statistics.median(values)
print("round  " + "  ".join(f"{n:>16s}" for n in names) + "   (req/s, share of that round's /healthz)")
for r in sorted(rows, key=int):
    h = rows[r]["healthz"][0]
    print(f"{r:>5s}  " + "  ".join(f"{rows[r][n][0]:9.0f} {100 * rows[r][n][0] / h:5.1f}%" for n in names))
print("median over the rounds:")
for n in names:
    rps = med([rows[r][n][0] for r in rows]); share = med([rows[r][n][0] / rows[r]["healthz"][0] for r in rows])
    p99 = sorted(rows[r][n][1] for r in rows)[len(rows) // 2]
    extra = ""
    if n == "put":
        sync = float(sys.argv[2] or 0)
        cap = 64 * 500 / sync if sync > 0 else 0
        extra = f"; {100 * rps / cap:.1f}% of the fsync cap {cap:.0f} req/s = 64 x {500 / sync:.0f} flushes/s" if cap else ""
    print(f"  {labels[n]:40s} {rps:10.0f} req/s  p99 {p99:>8s}  ({100 * share:.1f}% of /healthz{extra})")
print("the network threads' shares of their CPU, per round (uneven: one thread's core caps the rate):")
for n in names:
    print(f"  {n:12s} " + "  ".join(rows[r][n][5] for r in sorted(rows, key=int)))
print("CPU per request (µs, medians; machine = both cores, wrk included):")
for n in names:
    print(f"  {n:12s} machine {med([rows[r][n][2] for r in rows]):6.1f}  gateway {med([rows[r][n][3] for r in rows]):6.1f}"
          f"  postgres {med([rows[r][n][4] for r in rows]):6.1f}")
# A PUT costs the machine at least what /healthz does plus its own Postgres work (its write, its
# commit): even a gateway adding nothing else would keep at most this share of /healthz's rate.
ceiling = med([rows[r]["healthz"][2] / (rows[r]["healthz"][2] + rows[r]["put"][4]) for r in rows])
print(f"PUT ceiling from Postgres alone: {100 * ceiling:.1f}% of /healthz (/healthz's CPU per request / (that + Postgres CPU per PUT))")
print("goal: authenticated routes >= 50% of /healthz")
PY
# Mean requests per batched statement over the whole run (GET and PUT coalescing).
curl -sf "$BASE/metrics" | awk '/^bk_gateway_batch_size_(sum|count)/ { split($1, a, "\""); v[a[2] "_" ($1 ~ /_sum/ ? "sum" : "count")] = $2 }
  END { for (b in v) if (b ~ /_count$/) { n = substr(b, 1, length(b) - 6); if (v[b] > 0) printf "mean batch %-16s %.1f (%d batches)\n", n, v[n "_sum"] / v[b], v[b] } }' || true
