#!/usr/bin/env bash
# Gateway auth overhead: the trivial endpoint (GET /healthz, answered on the network thread)
# against an authenticated GET /v1/subscribers/{id} and PUT /v1/subscribers/{id} (tenant key:
# cached auth, Redis token bucket, tenant resolution, one Postgres statement), measured in the
# same run with wrk -t2 -c64 (keep-alive, loopback). Prints req/s, p99 and the ratio to /healthz,
# and for PUT its share of the ceiling durable commits allow (64 x the disk's 8 kB O_DSYNC writes/s,
# measured in the same run: each PUT waits for at least one WAL flush).
# The rate limit is set high enough not to refuse the benchmark's single key, but it runs.
# Usage: bench/gateway_auth.sh [duration, default 8s]. Stops everything it starts.
# BUZZKIT_BENCH_SCRATCH: the release build's scratch path (default .build-release-gateway).
# BUZZKIT_BENCH_SKIP_BUILD=1: run the binaries already built there.
# BUZZKIT_BENCH_PERF=<file>: record the gateway with `perf record -g` during one run
# (BUZZKIT_BENCH_PERF_ON=get|put|healthz|auth-only, default get; BUZZKIT_BENCH_PERF_ALL=1: whole system).
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
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

# measure NAME URL [LUA]: prints "rps p99"
measure() {
  local name="$1" url="$2" script="${3:-}" args=() out rps p99
  [ -n "$script" ] && args=(-s "$script")
  wrk -t2 -c64 -d2s "${args[@]}" "$url" >/dev/null   # warm-up
  local perf_pid=""
  if [ -n "${BUZZKIT_BENCH_PERF:-}" ] && [ "${BUZZKIT_BENCH_PERF_ON:-get}" = "$name" ]; then
    perf record -g -o "$BUZZKIT_BENCH_PERF" $([ -n "${BUZZKIT_BENCH_PERF_ALL:-}" ] && echo -a || echo -p "$GATEWAY_PID") \
      >/dev/null 2>&1 </dev/null & perf_pid=$!
  fi
  out="$(wrk -t2 -c64 -d"$DURATION" --latency "${args[@]}" "$url")"
  [ -n "$perf_pid" ] && { kill -INT "$perf_pid"; wait "$perf_pid" || true; }
  echo "$out" >"$WORK/wrk-$name.txt"
  if grep -q "Non-2xx" <<<"$out"; then bk_log "$name: non-2xx responses!"; grep "Non-2xx" <<<"$out" >&2; fi
  rps="$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")"
  p99="$(awk '$1 == "99%" {print $2}' <<<"$out")"
  echo "$rps $p99"
}

read -r H_RPS H_P99 <<<"$(measure healthz "$BASE/healthz")"
read -r G_RPS G_P99 <<<"$(measure get "$BASE/v1/subscribers/bench-user" "$WORK/get.lua")"
read -r P_RPS P_P99 <<<"$(measure put "$BASE/v1/subscribers/bench-user" "$WORK/put.lua")"
read -r A_RPS A_P99 <<<"$(measure auth-only "$BASE/v1/subscribers/bench-user" "$WORK/scope.lua" 2>/dev/null)"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f%%", 100 * a / b; else printf "n/a" }'; }
# The PUT ceiling durable commits allow: every PUT waits for at least one WAL flush, so 64
# connections get at most 64 requests per flush. One flush ~ one 8 kB O_DSYNC write on the disk
# that holds the cluster, measured here (500 of them).
SYNC_S="$(dd if=/dev/zero of="$WORK/pg/dsync.test" bs=8k count=500 oflag=dsync 2>&1 | awk '/copied/ { print $(NF-3) }')"
rm -f "$WORK/pg/dsync.test"
PUT_CAP="$(awk -v s="$SYNC_S" 'BEGIN { if (s > 0) printf "%.0f", 64 * 500 / s; else print 0 }')"
echo "wrk -t2 -c64 -d$DURATION, keep-alive, loopback; gateway release build, 2 HTTP threads, Postgres pool $BUZZKIT_DB_POOL_SIZE (durable commits)"
printf '%-40s %12s req/s  p99 %8s\n' "GET /healthz (trivial baseline)" "$H_RPS" "$H_P99"
printf '%-40s %12s req/s  p99 %8s  (%s of /healthz)\n' "GET /v1/subscribers/{id} (tenant key)" "$G_RPS" "$G_P99" "$(ratio "$G_RPS" "$H_RPS")"
printf '%-40s %12s req/s  p99 %8s  (%s of /healthz; %s of the fsync cap %s req/s = 64 x %s flushes/s)\n' \
  "PUT /v1/subscribers/{id} (tenant key)" "$P_RPS" "$P_P99" "$(ratio "$P_RPS" "$H_RPS")" \
  "$(ratio "$P_RPS" "$PUT_CAP")" "$PUT_CAP" "$(awk -v s="$SYNC_S" 'BEGIN { if (s > 0) printf "%.0f", 500 / s; else print 0 }')"
printf '%-40s %12s req/s  p99 %8s  (%s of /healthz)\n' "auth + rate limit only (403 by scope)" "$A_RPS" "$A_P99" "$(ratio "$A_RPS" "$H_RPS")"
echo "goal: authenticated routes >= 50% of /healthz"
# Mean requests per batched statement over the whole run (GET and PUT coalescing).
curl -sf "$BASE/metrics" | awk '/^bk_gateway_batch_size_(sum|count)/ { split($1, a, "\""); v[a[2] "_" ($1 ~ /_sum/ ? "sum" : "count")] = $2 }
  END { for (b in v) if (b ~ /_count$/) { n = substr(b, 1, length(b) - 6); if (v[b] > 0) printf "mean batch %-16s %.1f (%d batches)\n", n, v[n "_sum"] / v[b], v[b] } }' || true
