#!/usr/bin/env bash
# Push fan-out end to end: a topic of 100,000 devices (bulk-inserted in SQL), ONE message through
# the gateway, two apns-sender replicas against the APNs simulator (--no-record), all release
# builds on loopback. Measures deliveries/s from the POST to the last ledger row, then, in the same
# run, the simulator's own ceiling with h2load (4 connections x 100 streams), and prints the ratio.
# Usage: bench/push_fanout.sh [devices, default 100000]. Stops everything it starts.
# Also printed: CPU per delivery of each process (Postgres with all its backends), WAL bytes per
# delivery, inserts and updates of the ledger's tables, attempts that got no answer (by error), APNs latency
# percentiles, abnormal connection ends the simulator saw, and each replica's stage times.
# Knobs (defaults = the services' defaults): BK_SENDER_CONCURRENCY (8), BK_SENDER_CHUNK_SIZE (100),
# BK_FANOUT_PAGE_SIZE (1000), BK_APNS_TCP_NODELAY (true); BK_PUSH_PROFILE=DIR records 6 s of
# `perf record -a -g` into DIR; BK_PUSH_NO_BUILD=1 reuses the binaries in .build-release-push;
# BK_BIN_DIR=DIR runs the release binaries in DIR instead (another checkout's: before/after);
# BK_PUSH_WALDUMP=1 prints the WAL of the send by record type (pg_waldump --stats=record).
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

DEVICES="${1:-100000}"
command -v h2load >/dev/null || bk_die "h2load missing (apt-get install nghttp2-client)"
WORK="$(mktemp -d /tmp/bk-push-bench.XXXXXX)"
PIDS=()
PGPORT="$(bk_free_port)"; REDISPORT="$(bk_free_port)"
cleanup() {
  bench_stop_pids
  bk_stop_redis "$WORK/redis"
  bk_stop_postgres "$WORK/pg"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bk_log "building gateway, apns-sender, apns-sim, buzzkit-admin (release)"
if [ -n "${BK_BIN_DIR:-}" ]; then  # another build's binaries (a before/after in one sitting)
  BIN="$BK_BIN_DIR"
elif [ -n "${BK_PUSH_NO_BUILD:-}" ]; then  # reuse the binaries already built (A/B runs on a busy tree)
  BIN="$(swift build -c release --show-bin-path --scratch-path .build-release-push)"
else
  BIN="$(bench_release_build .build-release-push gateway apns-sender apns-sim buzzkit-admin)"
fi

bench_bootstrap_stack "$PGPORT" "$REDISPORT"

bk_log "inserting $DEVICES subscribers, devices and topic subscriptions"
bench_seed_topic "$DEVICES"

bk_log "starting apns-sim (--no-record, 1 thread), gateway, two apns-sender replicas"
"$BIN/apns-sim" --port 0 --control-port 0 --cert "$WORK/certs/cert.pem" --key "$WORK/certs/key.pem" \
  --key "BENCHKEY01=BENCHTEAM1:$WORK/provider.pub.pem" --no-record --threads 1 >"$WORK/sim.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q 'listening on' "$WORK/sim.out" && break; sleep 0.1; done
SIMPORT="$(sed -nE 's/.*listening on [^:]+:([0-9]+) control.*/\1/p' "$WORK/sim.out")"
[ -n "$SIMPORT" ] || bk_die "apns-sim did not start: $(cat "$WORK/sim.out")"

GWPORT="$(bk_free_port)"
BUZZKIT_HTTP_PORT="$GWPORT" BUZZKIT_RATE_LIMIT_ENABLED=false "$BIN/gateway" >"$WORK/gateway.log" 2>&1 &
PIDS+=($!)
SENDER_PORTS=()
for r in a b; do
  SENDER_PORTS+=("$(bk_free_port)")
  BUZZKIT_HTTP_PORT="${SENDER_PORTS[-1]}" BUZZKIT_INSTANCE_ID="bench-sender-$r" \
    BUZZKIT_APNS_SANDBOX_URL="https://127.0.0.1:$SIMPORT" BUZZKIT_APNS_CA_FILE="$WORK/certs/ca.pem" \
    BUZZKIT_SENDER_CONCURRENCY="${BK_SENDER_CONCURRENCY:-8}" BUZZKIT_SENDER_CHUNK_SIZE="${BK_SENDER_CHUNK_SIZE:-100}" \
    BUZZKIT_APNS_TCP_NODELAY="${BK_APNS_TCP_NODELAY:-true}" BUZZKIT_FANOUT_PAGE_SIZE="${BK_FANOUT_PAGE_SIZE:-1000}" \
    BUZZKIT_DB_POOL_SIZE=8 \
    "$BIN/apns-sender" >"$WORK/sender-$r.log" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$GWPORT/readyz" >/dev/null && break; sleep 0.1; done
sleep 1

# CPU ticks (user + system) of postgres (the postmaster and all its children), the senders, the
# simulator, redis and the gateway: read before and after the send, so the figures say where the
# machine's two cores went.
cpu_snapshot() {
  echo "$(bench_ticks $(bench_pg_pids "$WORK/pg/data")) $(bench_ticks "${PIDS[2]}" "${PIDS[3]}") $(bench_ticks "${PIDS[0]}") $(bench_ticks "$(cat "$WORK/redis/redis.pid")") $(bench_ticks "${PIDS[1]}")"
}
WAL0="$("${PSQL[@]}" -c "SELECT pg_current_wal_lsn()")"
CPU0="$(cpu_snapshot)"

bk_log "sending one message to topic 'everyone'"
if [ -n "${BK_PUSH_PROFILE:-}" ]; then
  # Diagnostics only (perf costs a few percent): 6 s of every process's stacks, machine-wide
  # (`-p` would miss the threads a replica starts later, such as its HTTP/2 client thread).
  mkdir -p "$BK_PUSH_PROFILE"
  perf record -F 499 -a -g -o "$BK_PUSH_PROFILE/perf.data" -- sleep 6 >/dev/null 2>&1 &
  echo "sender-a ${PIDS[2]} sender-b ${PIDS[3]} sim ${PIDS[0]} gateway ${PIDS[1]}" >"$BK_PUSH_PROFILE/pids"
fi
T0="$(date +%s.%N)"
REPLY="$(curl -sf -X POST "http://127.0.0.1:$GWPORT/v1/messages" -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" \
  -H 'Content-Type: application/json' -d '{"topic":"everyone","title":"Hello","body":"A benchmark push to everyone","data":{"k":1}}')"
ID="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["id"])' "$REPLY")"
DEADLINE=$(( $(date +%s) + 300 ))
# Wait on the replicas' own counters (deliveries recorded in the ledger), which cost the run
# nothing, then confirm in SQL; counting the message's rows in SQL every 0.2 s took a few
# percent of the machine away from the run.
recorded() {
  local port total=0 n
  for port in "${SENDER_PORTS[@]}"; do
    n="$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^bk_sender_deliveries_total / {print int($2)}')"
    total=$(( total + ${n:-0} ))
  done
  echo "$total"
}
while :; do
  if [ "$(recorded)" -ge "$DEVICES" ]; then
    DONE="$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE message_id = '$ID' AND status NOT IN ('queued', 'sending')")"
    [ "$DONE" -ge "$DEVICES" ] && break
  fi
  [ "$(date +%s)" -lt "$DEADLINE" ] || bk_die "timed out: $(recorded) of $DEVICES deliveries recorded"
  sleep 0.1
done
T1="$("${PSQL[@]}" -c "SELECT extract(epoch FROM max(updated_at)) FROM deliveries WHERE message_id = '$ID'")"
SENT="$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE message_id = '$ID' AND status = 'sent'")"
PUSH_RPS="$(python3 -c "print(round($DEVICES / ($T1 - $T0)))")"
CPU1="$(cpu_snapshot)"
WAL1="$("${PSQL[@]}" -c "SELECT pg_current_wal_lsn()")"
WAL_BYTES="$("${PSQL[@]}" -c "SELECT '$WAL1'::pg_lsn - '$WAL0'::pg_lsn")"
if [ -n "${BK_PUSH_WALDUMP:-}" ]; then
  # Where the WAL went, by record type (e.g. Heap/INSERT, Heap/HOT_UPDATE, Btree/INSERT_LEAF),
  # with bytes per delivery: the largest ten.
  bk_as_pg_user "$(bk_pg_bindir)/pg_waldump" --stats=record -p "$WORK/pg/data/pg_wal" -s "$WAL0" -e "$WAL1" 2>/dev/null \
    | python3 -c '
import re, sys
n = int(sys.argv[1])
rows = []
for line in sys.stdin:
    m = re.match(r"(\S+/\S+)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)", line)
    if m:
        rows.append((int(m.group(5)), m.group(1), int(m.group(2))))
for size, kind, count in sorted(rows, reverse=True)[:10]:
    print("WAL: %s %d records, %.0f bytes per delivery" % (kind, count, size / n))
' "$DEVICES" >&2 || true
fi
python3 - "$CPU0" "$CPU1" "$DEVICES" "$WAL_BYTES" "$(getconf CLK_TCK)" >&2 <<'PY'
import sys
a, b = [list(map(int, x.split())) for x in sys.argv[1:3]]
n, wal, hz = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
names = ["postgres", "apns-sender x2", "apns-sim", "redis", "gateway"]
parts = ["%s %.0f" % (name, (y - x) / hz * 1e6 / n) for name, x, y in zip(names, a, b)]
print("CPU per delivery (us): " + ", ".join(parts) + "; total %.0f; WAL %.0f bytes per delivery"
      % (sum(y - x for x, y in zip(a, b)) / hz * 1e6 / n, wal / n))
PY
# Rows counted in the tables (the statistics views lag: a backend reports its counts at most once a
# second, and only when idle, so they are read below after the services' backends have exited).
"${PSQL[@]}" -F' ' >&2 <<SQL
SELECT 'rows: deliveries ' || count(*) || ' (' || count(*) FILTER (WHERE status = 'sent') || ' sent), attempts '
  || (SELECT count(*) FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.message_id = '$ID')
  FROM deliveries WHERE message_id = '$ID';
SELECT 'attempts without an answer: ' || count(*) || ' ' || coalesce(error, '') FROM delivery_attempts WHERE status = 0 GROUP BY error;
SELECT 'APNs latency ms p50 / p90 / p99 / max: ' || array_to_string(percentile_disc(ARRAY[0.5, 0.9, 0.99, 1])
  WITHIN GROUP (ORDER BY latency_ms), ' / ') FROM delivery_attempts;
SQL
bk_log "deliveries done: $DEVICES ($SENT sent) in $(python3 -c "print(round($T1 - $T0, 2))") s"
grep 'connection closed' "$WORK/sim.out" | sort | uniq -c | sed 's/^/apns-sim: /' >&2 || true
# Where a chunk's time went, per replica (from /metrics; read after the run, so it costs it nothing).
for port in "${SENDER_PORTS[@]}"; do
  curl -sf "http://127.0.0.1:$port/metrics" | python3 -c '
import sys
m = {}
for line in sys.stdin:
    if line.startswith(("bk_sender_", "bk_apns_", "bk_fanout_")):
        key, value = line.rsplit(" ", 1)
        m[key] = float(value)
def avg(name, stage):
    n = m.get("%s_count{stage=\"%s\"}" % (name, stage), 0)
    return 1000 * m.get("%s_sum{stage=\"%s\"}" % (name, stage), 0) / n if n else 0
chunks = int(m.get("bk_sender_chunk_stage_seconds_count{stage=\"total\"}", 0))
pages = int(m.get("bk_fanout_page_seconds_count", 0))
line = "replica: %d chunks, %d deliveries, %d APNs requests; per chunk claim %.0f ms, send %.0f ms, record %.0f ms" % (
    chunks, m.get("bk_sender_deliveries_total", 0), m.get("bk_apns_requests_total", 0),
    avg("bk_sender_chunk_stage_seconds", "claim"), avg("bk_sender_chunk_stage_seconds", "send"),
    avg("bk_sender_chunk_stage_seconds", "record"))
if pages:
    line += "; fan-out %d pages, %.0f ms each" % (pages, 1000 * m["bk_fanout_page_seconds_sum"] / pages)
print(line)
' >&2 || true
done
for pid in "${PIDS[@]:1}"; do kill "$pid" 2>/dev/null || true; done
for pid in "${PIDS[@]:1}"; do wait "$pid" 2>/dev/null || true; done
# Every backend of the services has exited now, and a backend flushes its statistics when it exits.
for _ in $(seq 1 50); do
  [ "$("${PSQL[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")" = 0 ] && break
  sleep 0.1
done
"${PSQL[@]}" -F' ' >&2 <<SQL
SELECT 'table statistics (after the services exited): ' || relname || ' inserts ' || n_tup_ins || ', updates ' || n_tup_upd || ' (HOT ' || n_tup_hot_upd || ')'
  FROM pg_stat_user_tables WHERE relname IN ('deliveries', 'delivery_chunks', 'delivery_payloads') ORDER BY relname;
SQL

bk_log "simulator ceiling: h2load, 4 connections x 100 streams, same simulator process"
JWT="$(bench_apns_jwt "$WORK/provider.ec.pem" BENCHKEY01 BENCHTEAM1)"
TOKEN="$(openssl rand -hex 32)"
printf '{"aps":{"alert":{"title":"Hello","body":"A benchmark push to everyone"}},"bk":{"id":"00000000-0000-0000-0000-000000000000","data":{"k":1}}}' >"$WORK/payload.json"
OUT="$(timeout 120 h2load -n 200000 -c 4 -m 100 -H "authorization: bearer $JWT" \
  -H "apns-topic: com.example.bench" -H "apns-push-type: alert" -d "$WORK/payload.json" \
  "https://127.0.0.1:$SIMPORT/3/device/$TOKEN")"
grep -E "^status codes" <<<"$OUT" >&2
SIM_RPS="$(awk '/^finished in/ {print $4}' <<<"$OUT")"

echo "push fan-out, $DEVICES devices, 2 apns-sender replicas: $PUSH_RPS deliveries/s (POST to last ledger row)"
echo "apns-sim ceiling (h2load 4x100, same process):        ${SIM_RPS%.*} requests/s"
python3 -c "print('ratio: %.1f%% of the simulator ceiling (goal: >= 10000 deliveries/s and >= 50%%)' % (100.0 * $PUSH_RPS / $SIM_RPS))"
