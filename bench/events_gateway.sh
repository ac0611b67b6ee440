#!/usr/bin/env bash
# Events end to end (issue 5's benchmark): sustained POST /v1/events, batches of 100 events with
# unique client ids, wrk at 32 connections for a bounded time, against the release gateway and
# ingest services, Postgres with fsync and synchronous_commit on, Redis with AOF everysec.
# Prints
#   - events/s accepted by the gateway (202 answers x 100 / load time, counted by wrk),
#   - events/s durable in Postgres (rows stored for the tenant / time until the bk:ingest backlog
#     drained: the consumer group delivered the last entry and nothing is pending),
#   - a raw COPY of the same rows (another tenant) into `events`, two streams like the two ingest
#     consumers, in the same run, after the services are stopped; the ratio and the goal line.
# Usage: bench/events_gateway.sh [duration, default 20s] [runs, default 1]
# BK_BENCH_WAITS=1 samples pg_stat_activity's wait events during the load and the drain.
# Release binaries go to $BUZZKIT_BENCH_SCRATCH (default .build-release-bench). Bounded in time;
# stops everything it starts. Run it under the bench lock: flock /tmp/bk-bench.lock bench/events_gateway.sh
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

DURATION="${1:-20s}"
RUNS="${2:-1}"
CONNECTIONS=32
SCRATCH="${BUZZKIT_BENCH_SCRATCH:-.build-release-bench}"
command -v wrk >/dev/null || { bk_log "installing wrk"; apt-get install -y -qq wrk >/dev/null; }

WORK="$(mktemp -d /tmp/bk-events-bench.XXXXXX)"
chmod 755 "$WORK"
PIDS=()
cleanup() {
  bench_stop_pids
  bk_stop_postgres "$WORK/pg"
  bk_stop_redis "$WORK/redis"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bk_log "building gateway, ingest and buzzkit-admin (release, $SCRATCH)"
BIN="$(bench_release_build "$SCRATCH" gateway ingest buzzkit-admin)"

PG_PORT="$(bk_free_port)"; REDIS_PORT="$(bk_free_port)"; GATEWAY_PORT="$(bk_free_port)"; INGEST_PORT="$(bk_free_port)"
bk_start_postgres "$WORK/pg" "$PG_PORT"
bk_start_redis "$WORK/redis" "$REDIS_PORT"
PSQL="$(bk_pg_bindir)/psql"
export BUZZKIT_DATABASE_URL="postgres://buzzkit@127.0.0.1:$PG_PORT/buzzkit"
export BUZZKIT_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
export BUZZKIT_SECRET_KEY="$(openssl rand -base64 32)"
export BUZZKIT_LOG_LEVEL=warning
# The limiter runs (a Redis round trip per request) but never refuses the benchmark's single key.
export BUZZKIT_RATE_LIMIT_RPS=1000000 BUZZKIT_RATE_LIMIT_BURST=10000000
REDIS=(redis-cli -h 127.0.0.1 -p "$REDIS_PORT")
sql() { "$PSQL" -qtA -v ON_ERROR_STOP=1 "$BUZZKIT_DATABASE_URL" -c "$1"; }
now() { date +%s.%N; }
# CPU ticks used so far by the gateway, ingest, postgres (the postmaster and its children) and redis.
cpu_all() {
  echo "$(bench_ticks "${PIDS[0]}") $(bench_ticks "${PIDS[1]}") $(bench_ticks $(bench_pg_pids "$WORK/pg/data")) $(bench_ticks "$(cat "$WORK/redis/redis.pid")")"
}

"$BIN/buzzkit-admin" migrate >/dev/null
eval "$("$BIN/buzzkit-admin" bootstrap --workspace bench --demo-tenant bench-app)"

BUZZKIT_HTTP_PORT="$GATEWAY_PORT" "$BIN/gateway" >"$WORK/gateway.log" 2>&1 &
PIDS+=($!)
BUZZKIT_HTTP_PORT="$INGEST_PORT" "$BIN/ingest" >"$WORK/ingest.log" 2>&1 &
PIDS+=($!)
for port in "$GATEWAY_PORT" "$INGEST_PORT"; do
  up=""
  for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && { up=1; break; }; sleep 0.1; done
  [ -n "$up" ] || { tail -20 "$WORK"/*.log >&2; bk_die "a service on port $port did not become ready"; }
done

# The load: each wrk thread numbers its requests; request n of thread t carries events
# r<run>-t<t>-<n>-<0..99> for subscriber user-<n mod 10000>, 20 names, about 60 bytes of data,
# timestamps 10 ms apart within the last hour. Only 202 answers count as accepted.
cat >"$WORK/events.lua" <<'LUA'
local threads = {}
local next_id = 0
function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
  table.insert(threads, thread)
end
function init(args)
  run = args[1]
  base = tonumber(args[2])
  headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. args[3] }
  counter = 0
  accepted = 0
  rejected = 0
end
request = function()
  counter = counter + 1
  local prefix = '{"id":"' .. run .. "-t" .. tid .. "-" .. counter .. "-"
  local ms = base + (counter * 100) % 3000000
  local stamp = os.date("!%Y-%m-%dT%H:%M:%S", math.floor(ms / 1000))
  local parts = {}
  for e = 0, 99 do
    parts[e + 1] = prefix .. e .. '","name":"event.name.' .. ((counter + e) % 20) .. '","timestamp":"' .. stamp ..
      string.format(".%03dZ", e * 10) .. '","data":{"duration":' .. e .. ',"program":"legs","source":"bench"}}'
  end
  local body = '{"subscriberId":"user-' .. (counter % 10000) .. '","events":[' .. table.concat(parts, ",") .. ']}'
  return wrk.format("POST", "/v1/events", headers, body)
end
response = function(status, headers, body)
  if status == 202 then accepted = accepted + 1 else rejected = rejected + 1 end
end
done = function(summary, latency, requests)
  local a, r = 0, 0
  for _, thread in ipairs(threads) do
    a = a + thread:get("accepted")
    r = r + thread:get("rejected")
  end
  io.write(string.format("accepted_batches %d\nrejected_batches %d\n", a, r))
  io.write(string.format("latency_p50_ms %.2f\nlatency_p99_ms %.2f\n", latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
LUA

# drained: the ingest group has delivered the stream's last entry and holds nothing pending.
drained() {
  local last delivered pending
  last="$("${REDIS[@]}" --raw XINFO STREAM bk:ingest | awk 'prev == "last-generated-id" {print; exit} {prev = $0}')"
  delivered="$("${REDIS[@]}" --raw XINFO GROUPS bk:ingest | awk 'prev == "last-delivered-id" {print; exit} {prev = $0}')"
  pending="$("${REDIS[@]}" --raw XPENDING bk:ingest ingest | head -1)"
  [ -n "$last" ] && [ "$last" = "$delivered" ] && [ "$pending" = 0 ]
}

TENANT_UUID="$BUZZKIT_TENANT"
COPY_TENANT="$(python3 -c 'import uuid; print(uuid.uuid4())')"
BASE_MS="$(( ($(date +%s) - 3600) * 1000 ))"
SUMMARY=()
COPY_JOBS=()
for run in $(seq 1 "$RUNS"); do
  before="$(sql "SELECT count(*) FROM events WHERE tenant_id = '$TENANT_UUID'")"
  bk_log "run $run: wrk -t2 -c$CONNECTIONS -d$DURATION POST /v1/events (100 events per batch)"
  cpu_before="$(cpu_all)"
  PERF_PID=""
  if [ -n "${BK_BENCH_PERF:-}" ]; then   # BK_BENCH_PERF=1: profile gateway and ingest during the load
    ( perf record -F 499 -g -p "${PIDS[0]}" -o "$WORK/perf-gateway.data" -- sleep 5 >/dev/null 2>&1 &
      perf record -F 499 -g -p "${PIDS[1]}" -o "$WORK/perf-ingest.data" -- sleep 5 >/dev/null 2>&1; wait ) &
    PERF_PID=$!
  fi
  WAITS_PID=""
  if [ -n "${BK_BENCH_WAITS:-}" ]; then   # BK_BENCH_WAITS=1: sample what Postgres's backends wait on
    ( while :; do
        sql "SELECT coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, '-') FROM pg_stat_activity
             WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid()" 2>/dev/null
        sleep 0.05
      done >>"$WORK/waits-$run.txt" ) &
    WAITS_PID=$!
  fi
  start="$(now)"
  /usr/bin/time -f "wrk_cpu %U %S" -o "$WORK/wrk-time-$run.txt" wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --timeout 10s -s "$WORK/events.lua" "http://127.0.0.1:$GATEWAY_PORT/v1/events" \
    -- "r$run-$$" "$BASE_MS" "$BUZZKIT_TENANT_KEY" >"$WORK/wrk-$run.txt"
  load_end="$(now)"
  if [ -n "${PERF_PID:-}" ]; then
    wait "$PERF_PID" || true
    for name in gateway ingest; do
      perf report -i "$WORK/perf-$name.data" --stdio --no-children --sort symbol -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60 >"/tmp/bk-events-perf-$name.txt" || true
    done
    bk_log "profiles: /tmp/bk-events-perf-gateway.txt /tmp/bk-events-perf-ingest.txt"
  fi
  deadline=$(( $(date +%s) + 600 ))
  until drained; do
    [ "$(date +%s)" -lt "$deadline" ] || { tail -20 "$WORK/ingest.log" >&2; bk_die "the bk:ingest backlog did not drain in 600 s"; }
    sleep 0.1
  done
  drain_end="$(now)"
  if [ -n "$WAITS_PID" ]; then
    kill "$WAITS_PID" 2>/dev/null || true; wait "$WAITS_PID" 2>/dev/null || true
    bk_log "run $run: what active Postgres backends were doing (samples every ~50 ms, load + drain):"
    sort "$WORK/waits-$run.txt" | uniq -c | sort -rn | head -12 >&2
  fi
  cpu_after="$(cpu_all)"
  cpu="$(python3 - "$cpu_before" "$cpu_after" "$WORK/wrk-time-$run.txt" "$start" "$drain_end" <<'PY'
import sys
b, a = [int(x) for x in sys.argv[1].split()], [int(x) for x in sys.argv[2].split()]
w = next(l.split() for l in open(sys.argv[3]) if l.startswith("wrk_cpu"))
secs = [(y - x) / 100 for x, y in zip(b, a)] + [float(w[1]) + float(w[2])]
wall = float(sys.argv[5]) - float(sys.argv[4])
print(",".join(f"{n}={c / wall * 100:.0f}%" for n, c in zip(["gateway", "ingest", "postgres", "redis", "wrk"], secs)))
PY
)"
  stored="$(( $(sql "SELECT count(*) FROM events WHERE tenant_id = '$TENANT_UUID'") - before ))"
  accepted_batches="$(awk '/^accepted_batches/ {print $2}' "$WORK/wrk-$run.txt")"
  rejected_batches="$(awk '/^rejected_batches/ {print $2}' "$WORK/wrk-$run.txt")"
  p50="$(awk '/^latency_p50_ms/ {print $2}' "$WORK/wrk-$run.txt")"
  p99="$(awk '/^latency_p99_ms/ {print $2}' "$WORK/wrk-$run.txt")"
  [ "$rejected_batches" = 0 ] || { grep -v '^$' "$WORK/wrk-$run.txt" >&2; tail -5 "$WORK/gateway.log" >&2; bk_log "run $run: $rejected_batches batches were not accepted"; }
  # Every accepted event is stored (wrk may also abandon a few requests the gateway accepted at the end).
  [ "$stored" -ge "$(( accepted_batches * 100 ))" ] || bk_die "run $run: $stored events stored, fewer than the $(( accepted_batches * 100 )) accepted"

  # The same rows, under another tenant, by raw COPY in two parallel streams (the services are idle now).
  sql "COPY (SELECT '$COPY_TENANT'::uuid, event_id, name, subscriber_id, anonymous_id, data, occurred_at, received_at
            FROM events WHERE tenant_id = '$TENANT_UUID' AND event_id LIKE 'r$run-$$-%' ORDER BY received_at, event_id)
        TO STDOUT" >"$WORK/rows.tsv"
  split -n l/2 -d "$WORK/rows.tsv" "$WORK/rows-part-"
  SUMMARY+=("$run $start $load_end $drain_end $stored $accepted_batches $p50 $p99 $cpu")
  echo "${SUMMARY[-1]}" >>"$WORK/runs.txt"
  copy_start="$(now)"
  for part in "$WORK/rows-part-00" "$WORK/rows-part-01"; do
    "$PSQL" -q -v ON_ERROR_STOP=1 "$BUZZKIT_DATABASE_URL" \
      -c "\\copy events (tenant_id, event_id, name, subscriber_id, anonymous_id, data, occurred_at, received_at) FROM '$part'" &
    COPY_JOBS+=($!)
  done
  for job in "${COPY_JOBS[@]}"; do wait "$job"; done
  COPY_JOBS=()
  copy_end="$(now)"
  echo "$run $copy_start $copy_end" >>"$WORK/copies.txt"
  rm -f "$WORK"/rows*
  sql "DELETE FROM events WHERE tenant_id = '$COPY_TENANT'" >/dev/null
  sql "VACUUM events" >/dev/null 2>&1 || true
done

python3 - "$WORK/runs.txt" "$WORK/copies.txt" "$CONNECTIONS" "$DURATION" <<'PY'
import sys
runs = [l.split() for l in open(sys.argv[1])]
copies = {l.split()[0]: l.split()[1:] for l in open(sys.argv[2])}
print(f"POST /v1/events, 100 events per batch, wrk -t2 -c{sys.argv[3]} -d{sys.argv[4]}; gateway + ingest release builds;")
print("Postgres fsync on, synchronous_commit on; Redis AOF everysec; raw COPY: the same rows, 2 streams, same run")
ok = True
for run, start, load_end, drain_end, stored, accepted, p50, p99, cpu in runs:
    start, load_end, drain_end, stored, accepted = float(start), float(load_end), float(drain_end), int(stored), int(accepted)
    copy_start, copy_end = (float(x) for x in copies[run])
    accepted_rate = accepted * 100 / (load_end - start)
    durable_rate = stored / (drain_end - start)
    copy_rate = stored / (copy_end - copy_start)
    ratio = durable_rate / copy_rate
    ok = ok and durable_rate >= 50000 and ratio >= 0.40
    print(f"run {run}: accepted {accepted_rate:>9,.0f} events/s (p50 {p50} ms, p99 {p99} ms)  "
          f"durable {durable_rate:>9,.0f} events/s ({stored:,} rows, drained {drain_end - load_end:.1f} s after the load)  "
          f"raw COPY {copy_rate:>9,.0f} rows/s  ratio {ratio:.2f}")
    print(f"       CPU while loading and draining (% of one core): {cpu.replace(',', ' ')}")
print(f"goal: >= 50,000 events/s durable and >= 0.40 of raw COPY: {'met' if ok else 'NOT met'}")
PY
