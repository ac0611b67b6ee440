#!/usr/bin/env bash
# Outbound webhooks (issue 27), release builds on loopback. Two parts:
#
#   bench/webhooks.sh [seam [EVENTS]]   (default; EVENTS default 200000)
#     1. The seam's cost: EVENTS rows written by a stand-in for the ledger's write (statements of
#        100 rows, 4 connections: `buzzkit-bench webhooks produce`), three times in one run: without the
#        seam (the raw baseline), with the seam and no endpoint subscribed, and with the seam and an
#        endpoint subscribed to delivery.sent (the events land in the outbox). Prints µs of Postgres
#        CPU (the producer's backends, read from /proc) and of the producer's CPU per event for each,
#        and the differences: what the seam costs.
#     2. Delivery: one webhooks replica then takes those EVENTS delivery.sent events from the outbox
#        and sends them, batched (up to 100 a request), signed, to a local receiver
#        (`buzzkit-bench webhook-sink`); prints deliveries/s (goal >= 20,000) and µs of CPU per
#        delivery (webhooks, Postgres, receiver), next to the receiver's own ceiling in the same run:
#        raw POSTs of the same bodies by curl's parallel mode (the ratio is the figure to compare).
#
#   bench/webhooks.sh send [DEVICES]    (DEVICES default 100000)
#     The send path with and without webhooks: a DEVICES-device topic send through gateway, two
#     apns-sender replicas and the APNs simulator, first with no endpoint, then with an endpoint
#     subscribed to delivery.sent and a webhooks replica sending to the receiver, then with no
#     endpoint again (the baseline bracketing it). Prints the
#     deliveries/s and the CPU per delivery of each run: the send itself (gateway, senders,
#     simulator, and Postgres but for the webhooks replica's sessions, which are named and counted
#     apart), the webhooks' delivery (the replica and its sessions) and everything; the send
#     itself with / without is the goal's ratio (at most 10% more), and how many delivery.sent
#     deliveries the receiver got (every delivery: the ledger's
#     record statement enqueues one delivery.sent per delivery APNs accepted).
#     BK_WH_STATEMENTS=1 (with BK_PG_OPTIONS="-c shared_preload_libraries=pg_stat_statements
#     -c pg_stat_statements.track_planning=on") prints the top statements of the subscribed send;
#     BK_WH_PG_PERF=FILE records it with perf (machine-wide) into FILE.
#
# Stops everything it starts. Run benchmarks one at a time: flock -o /tmp/bk-bench.lock bench/webhooks.sh
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

PART="${1:-seam}"
WORK="$(mktemp -d /tmp/bk-webhooks-bench.XXXXXX)"
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
HZ="$(getconf CLK_TCK)"

PRODUCTS=(webhooks buzzkit-admin buzzkit-bench)
[ "$PART" = send ] && PRODUCTS+=(gateway apns-sender apns-sim)
bk_log "building ${PRODUCTS[*]} (release)"
if [ -n "${BK_BIN_DIR:-}" ]; then BIN="$BK_BIN_DIR"; else BIN="$(bench_release_build .build-release-webhooks "${PRODUCTS[@]}")"; fi

bench_bootstrap_stack "$PGPORT" "$REDISPORT"
"${PSQL[@]}" -c "ALTER SYSTEM SET synchronous_commit = on" >/dev/null
# BK_WEBHOOKS_DATA_COMPRESSION=lz4|pglz: how the outbox's and the messages' jsonb and delivery
# batches are compressed (migration 0020 leaves the jsonb with Postgres's default, pglz; 0030 sets
# lz4 for the batches); BK_WEBHOOKS_BATCH_STORAGE=extended|external|main: how the batches' arrays
# are stored (external: out of line, never compressed). To measure what each costs.
BATCH_COLUMNS="batch_delivery_ids batch_message_ids batch_subscriber_ids batch_device_tokens batch_environments"
for table in webhook_outbox webhook_messages; do
  if [ -n "${BK_WEBHOOKS_DATA_COMPRESSION:-}" ]; then
    for column in data $BATCH_COLUMNS; do
      "${PSQL[@]}" -c "ALTER TABLE $table ALTER COLUMN $column SET COMPRESSION $BK_WEBHOOKS_DATA_COMPRESSION" >/dev/null
    done
    bk_log "$table: data and batches compressed with $BK_WEBHOOKS_DATA_COMPRESSION"
  fi
  if [ -n "${BK_WEBHOOKS_BATCH_STORAGE:-}" ]; then
    for column in $BATCH_COLUMNS; do
      "${PSQL[@]}" -c "ALTER TABLE $table ALTER COLUMN $column SET STORAGE $BK_WEBHOOKS_BATCH_STORAGE" >/dev/null
    done
    bk_log "$table: batches stored $BK_WEBHOOKS_BATCH_STORAGE"
  fi
done

# The receiver: counts requests and the deliveries they carry.
"$BIN/buzzkit-bench" webhook-sink --port 0 --threads 2 2>"$WORK/sink.out" &
SINK_PID=$!
PIDS+=("$SINK_PID")
for _ in $(seq 1 100); do grep -q 'listening on' "$WORK/sink.out" 2>/dev/null && break; sleep 0.1; done
SINKPORT="$(sed -nE 's/.*listening on [^:]+:([0-9]+).*/\1/p' "$WORK/sink.out")"
[ -n "$SINKPORT" ] || bk_die "the receiver did not start: $(cat "$WORK/sink.out")"
SINK="http://127.0.0.1:$SINKPORT"
sink_count() { curl -sf "$SINK/count" | python3 -c 'import json,sys; print(json.load(sys.stdin)["deliveries"])'; }
# Postgres's CPU: the postmaster's own and its reaped backends' (cutime, cstime), plus the live
# backends' (a producer's connections end with it; their time then moves to the postmaster).
pg_ticks() {
  local pm; pm="$(head -1 "$WORK/pg/data/postmaster.pid")"
  echo $(( $(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat") + $(bench_ticks $(pgrep -P "$pm" | tr '\n' ' ')) ))
}
# The CPU ticks of the webhooks replica's Postgres backends (its pool keeps its sessions open).
wh_pg_ticks() {
  bench_ticks $("${PSQL[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'bench-webhooks'" | tr '\n' ' ')
}
export BUZZKIT_WEBHOOKS_ALLOW_PRIVATE=true

start_webhooks() {
  WH_PORT="$(bk_free_port)"
  # A service's Postgres sessions are named after its instance id (application_name), so that
  # this replica's backends' CPU can be told from the send's (wh_pg_ticks).
  BUZZKIT_HTTP_PORT="$WH_PORT" BUZZKIT_INSTANCE_ID="bench-webhooks" BUZZKIT_DB_POOL_SIZE=4 \
    "$BIN/webhooks" >"$WORK/webhooks.log" 2>&1 &
  WH_PID=$!
  PIDS+=("$WH_PID")
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$WH_PORT/readyz" >/dev/null && break; sleep 0.1; done
}

if [ "$PART" = seam ]; then
  EVENTS="${2:-200000}"
  # One measured producer run: prints "pg_us client_us rate".
  produce() {
    local seam="$1"
    /usr/bin/time -f '%U %S' -o "$WORK/time" "$BIN/buzzkit-bench" webhooks produce --postgres "$BUZZKIT_DATABASE_URL" \
      --tenant "$BUZZKIT_TENANT" --events "$EVENTS" --batch 100 --connections 4 --seam "$seam" >"$WORK/produce.out"
    python3 - 0 "$(sed -nE 's/.*backend_ticks=([0-9]+).*/\1/p' "$WORK/produce.out")" "$(cat "$WORK/time")" "$EVENTS" "$HZ" "$(cat "$WORK/produce.out")" <<'PY'
import sys, re
b, a = int(sys.argv[1]), int(sys.argv[2])
user, system = map(float, sys.argv[3].split()[-2:])
n, hz = int(sys.argv[4]), int(sys.argv[5])
rate = re.search(r"rate=(\d+)", sys.argv[6]).group(1)
print("%.2f %.2f %s" % ((a - b) / hz / n * 1e6, (user + system) / n * 1e6, rate))
PY
  }
  "${PSQL[@]}" -c "CHECKPOINT" >/dev/null
  bk_log "1. the seam: $EVENTS rows in statements of 100 (4 connections), three ways"
  read -r RAW_PG RAW_CLIENT RAW_RATE <<<"$(produce off)"
  "${PSQL[@]}" -c "TRUNCATE bench_webhook_producer; CHECKPOINT" >/dev/null
  read -r NOSUB_PG NOSUB_CLIENT NOSUB_RATE <<<"$(produce on)"
  "${PSQL[@]}" -c "TRUNCATE bench_webhook_producer; CHECKPOINT" >/dev/null
  ENDPOINT="$("$BIN/buzzkit-bench" webhooks endpoint --postgres "$BUZZKIT_DATABASE_URL" --tenant "$BUZZKIT_TENANT" \
    --url "$SINK/hook" --events delivery.sent)"
  read -r SUB_PG SUB_CLIENT SUB_RATE <<<"$(produce on)"
  OUTBOX="$("${PSQL[@]}" -c "SELECT coalesce(sum(coalesce(cardinality(batch_delivery_ids), jsonb_array_length(data->'deliveries'), 1)), 0) FROM webhook_outbox")"
  [ "$OUTBOX" -eq "$EVENTS" ] || bk_die "the outbox holds $OUTBOX events, expected $EVENTS"
  printf 'seam: %-34s Postgres %7s µs/event  producer %6s µs/event  %7s rows/s\n' \
    "without the seam (raw baseline)" "$RAW_PG" "$RAW_CLIENT" "$RAW_RATE" \
    "with the seam, no endpoint" "$NOSUB_PG" "$NOSUB_CLIENT" "$NOSUB_RATE" \
    "with the seam, an endpoint" "$SUB_PG" "$SUB_CLIENT" "$SUB_RATE"
  python3 - "$RAW_PG" "$NOSUB_PG" "$SUB_PG" "$RAW_CLIENT" "$NOSUB_CLIENT" "$SUB_CLIENT" <<'PY'
import sys
raw, nosub, sub, craw, cnosub, csub = map(float, sys.argv[1:])
print("seam cost per event: no endpoint %+.2f µs Postgres (%+.0f%%), %+.2f µs producer; subscribed %+.2f µs Postgres (%+.0f%%), %+.2f µs producer"
      % (nosub - raw, 100 * (nosub - raw) / raw, cnosub - craw, sub - raw, 100 * (sub - raw) / raw, csub - craw))
PY

  bk_log "2. delivery: one webhooks replica sends the $EVENTS outbox events to the receiver"
  "${PSQL[@]}" -c "VACUUM ANALYZE" >/dev/null
  "${PSQL[@]}" -c "CHECKPOINT" >/dev/null
  PG0="$(pg_ticks)"; SINK0="$(bench_ticks "$SINK_PID")"; M0="$(bench_machine_ticks)"
  T0="$(date +%s.%N)"
  start_webhooks
  DEADLINE=$(( $(date +%s) + 600 ))
  while [ "$(sink_count)" -lt "$EVENTS" ]; do
    [ "$(date +%s)" -lt "$DEADLINE" ] || bk_die "timed out: $(sink_count) of $EVENTS deliveries received"
    sleep 0.05
  done
  T1="$(date +%s.%N)"
  PG1="$(pg_ticks)"; SINK1="$(bench_ticks "$SINK_PID")"; WH1="$(bench_ticks "$WH_PID")"; M1="$(bench_machine_ticks)"
  COUNTS="$(curl -sf "$SINK/count")"
  FAILED="$("${PSQL[@]}" -c "SELECT count(*) FROM webhook_attempts WHERE outcome <> 'delivered'")"
  python3 - "$COUNTS" "$T0" "$T1" "$EVENTS" "$HZ" "$PG0" "$PG1" "$WH1" "$SINK0" "$SINK1" "$M0" "$M1" "$FAILED" <<'PY'
import json, sys
c = json.loads(sys.argv[1]); t0, t1 = float(sys.argv[2]), float(sys.argv[3]); n, hz = int(sys.argv[4]), int(sys.argv[5])
pg, wh, sink, machine = (int(sys.argv[7]) - int(sys.argv[6])), int(sys.argv[8]), (int(sys.argv[10]) - int(sys.argv[9])), (int(sys.argv[12]) - int(sys.argv[11]))
rate = c["deliveries"] / (t1 - t0)
per = lambda ticks: ticks / hz / c["deliveries"] * 1e6
print("delivery: %d deliveries in %d requests (%.1f per request, %d distinct webhook-ids), %.2f s from start (replica start-up included): %.0f deliveries/s (goal >= 20,000: %s)"
      % (c["deliveries"], c["requests"], c["deliveries"] / max(1, c["requests"]), c["ids"], t1 - t0, rate, "met" if rate >= 20000 else "NOT met"))
print("delivery: first to last request %.2f s: %.0f deliveries/s" % (c["lastAt"] - c["firstAt"], c["deliveries"] / max(1e-9, c["lastAt"] - c["firstAt"])))
print("delivery CPU per delivery: webhooks %.2f µs, Postgres %.2f µs, receiver %.2f µs, machine %.2f µs; attempts not delivered: %s"
      % (per(wh), per(pg), per(sink), per(machine), sys.argv[13]))
PY

  bk_log "   baseline: the receiver's ceiling for the same bodies (curl --parallel, 8 at once)"
  "${PSQL[@]}" -c "SELECT jsonb_build_object('type', 'delivery.sent', 'timestamp', now(), 'data', data)::text FROM webhook_messages LIMIT 1" >"$WORK/body.json"
  REQUESTS=2000
  python3 - "$SINK/hook" "$WORK/body.json" "$REQUESTS" >"$WORK/curl.cfg" <<'PY'
import sys
for _ in range(int(sys.argv[3])):
    print('url = "%s"\nrequest = "POST"\ndata-binary = "@%s"\nheader = "Content-Type: application/json"\noutput = "/dev/null"' % (sys.argv[1], sys.argv[2]))
PY
  B0="$(sink_count)"; TB0="$(date +%s.%N)"
  curl -s --parallel --parallel-max 8 -K "$WORK/curl.cfg"
  TB1="$(date +%s.%N)"; B1="$(sink_count)"
  python3 - "$B0" "$B1" "$TB0" "$TB1" "$T0" "$T1" "$EVENTS" <<'PY'
import sys
b0, b1, t0, t1, d0, d1, n = int(sys.argv[1]), int(sys.argv[2]), *map(float, sys.argv[3:7]), int(sys.argv[7])
raw = (b1 - b0) / (t1 - t0)
ours = n / (d1 - d0)
if raw > 0:
    print("baseline: raw POSTs of the same bodies: %.0f deliveries/s; webhooks / raw = %.2f" % (raw, ours / raw))
else:
    print("baseline: the receiver counted no delivery in the raw POSTs (curl's requests did not reach its count): no ratio")
PY
  exit 0
fi

if [ "$PART" = send ]; then
  DEVICES="${2:-100000}"
  bk_log "inserting $DEVICES subscribers, devices and topic subscriptions"
  bench_seed_topic "$DEVICES"
  "$BIN/apns-sim" --port 0 --control-port 0 --cert "$WORK/certs/cert.pem" --key "$WORK/certs/key.pem" \
    --key "BENCHKEY01=BENCHTEAM1:$WORK/provider.pub.pem" --no-record --threads 1 >"$WORK/sim.out" 2>&1 &
  SIM_PID=$!
  PIDS+=("$SIM_PID")
  for _ in $(seq 1 100); do grep -q 'listening on' "$WORK/sim.out" && break; sleep 0.1; done
  SIMPORT="$(sed -nE 's/.*listening on [^:]+:([0-9]+) control.*/\1/p' "$WORK/sim.out")"
  GWPORT="$(bk_free_port)"
  BUZZKIT_HTTP_PORT="$GWPORT" BUZZKIT_RATE_LIMIT_ENABLED=false "$BIN/gateway" >"$WORK/gateway.log" 2>&1 &
  GW_PID=$!
  PIDS+=("$GW_PID")
  SENDER_PIDS=()
  for r in a b; do
    BUZZKIT_HTTP_PORT="$(bk_free_port)" BUZZKIT_INSTANCE_ID="bench-sender-$r" BUZZKIT_DB_POOL_SIZE=8 \
      BUZZKIT_APNS_SANDBOX_URL="https://127.0.0.1:$SIMPORT" BUZZKIT_APNS_CA_FILE="$WORK/certs/ca.pem" \
      "$BIN/apns-sender" >"$WORK/sender-$r.log" 2>&1 &
    SENDER_PIDS+=($!)
    PIDS+=($!)
  done
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$GWPORT/readyz" >/dev/null && break; sleep 0.1; done
  sleep 1
  # CPU ticks so far of: Postgres, the two senders, the gateway, the simulator, the webhooks
  # replica (0 before it starts), the receiver, and the part of Postgres's that the webhooks
  # replica's sessions used.
  stack_ticks() {
    echo "$(pg_ticks) $(bench_ticks "${SENDER_PIDS[@]}") $(bench_ticks "$GW_PID") $(bench_ticks "$SIM_PID")" \
      "$(bench_ticks ${WH_PID:-}) $(bench_ticks "$SINK_PID") $(wh_pg_ticks)"
  }
  # One send of the topic; prints "seconds machine_us_per_delivery" and then µs per delivery of
  # Postgres, the senders, the gateway, the simulator, the webhooks replica and the receiver.
  send_once() {
    local m0 reply id t0 done_at k0
    "${PSQL[@]}" -c "CHECKPOINT" >/dev/null
    m0="$(bench_machine_ticks)"
    k0="$(stack_ticks)"
    t0="$(date +%s.%N)"
    reply="$(curl -sf -X POST "http://127.0.0.1:$GWPORT/v1/messages" -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" \
      -H 'Content-Type: application/json' -d '{"topic":"everyone","title":"Hello","body":"A benchmark push"}')"
    id="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["id"])' "$reply")"
    local deadline=$(( $(date +%s) + 600 ))
    while [ "$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE message_id = '$id' AND status NOT IN ('queued', 'sending')")" -lt "$DEVICES" ]; do
      [ "$(date +%s)" -lt "$deadline" ] || bk_die "the send did not finish"
      sleep 0.5
    done
    done_at="$("${PSQL[@]}" -c "SELECT extract(epoch FROM max(updated_at)) FROM deliveries WHERE message_id = '$id'")"
    python3 -c "
import sys
t0, t1, m0, m1, n, hz = map(float, sys.argv[1:7])
k0, k1 = [list(map(int, a.split())) for a in sys.argv[7:9]]
us = lambda ticks: ticks / hz / n * 1e6
print('%.2f %.1f ' % (t1 - t0, us(m1 - m0)) + ' '.join('%.1f' % us(b - a) for a, b in zip(k0, k1)))" \
      "$t0" "$done_at" "$m0" "$(bench_machine_ticks)" "$DEVICES" "$HZ" "$k0" "$(stack_ticks)"
  }
  bk_log "send 1: no webhook endpoint"
  read -r S1 CPU1 K1 <<<"$(send_once)"
  bk_log "send 2: an endpoint subscribed to delivery.sent, a webhooks replica sending to the receiver"
  "$BIN/buzzkit-bench" webhooks endpoint --postgres "$BUZZKIT_DATABASE_URL" --tenant "$BUZZKIT_TENANT" \
    --url "$SINK/hook" --events delivery.sent >/dev/null
  start_webhooks
  if [ -n "${BK_WH_STATEMENTS:-}" ]; then
    "${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()" >/dev/null
  fi
  PERF_PID=""
  if [ -n "${BK_WH_PG_PERF:-}" ]; then
    perf record -e cpu-clock -F 999 -g -a -o "$BK_WH_PG_PERF" >/dev/null 2>&1 &
    PERF_PID=$!
  fi
  read -r S2 CPU2 K2 <<<"$(send_once)"
  # Every delivery reported: wait for the receiver to have them all (or 10 minutes).
  DEADLINE=$(( $(date +%s) + 600 ))
  while [ "$(sink_count)" -lt "$DEVICES" ] && [ "$(date +%s)" -lt "$DEADLINE" ]; do sleep 0.2; done
  if [ -n "$PERF_PID" ]; then kill -INT "$PERF_PID" 2>/dev/null || true; wait "$PERF_PID" 2>/dev/null || true; fi
  if [ -n "${BK_WH_STATEMENTS:-}" ]; then
    "${PSQL[@]}" -P pager=off -F' | ' >&2 -c "SELECT calls, round(total_exec_time) AS ms, round(total_plan_time) AS plan_ms,
        rows, wal_bytes, left(regexp_replace(query, '\s+', ' ', 'g'), 140) FROM pg_stat_statements
        ORDER BY total_exec_time + total_plan_time DESC LIMIT 12"
  fi
  sleep 2  # anything more would be a duplicate
  RECEIVED="$(sink_count)"
  SINKSTATS="$(curl -sf "$SINK/count")"
  # The baseline again after it (the tables have grown by one send): the endpoint's subscriptions
  # removed, the webhooks replica left running idle.
  bk_log "send 3: no endpoint again (its subscriptions removed)"
  "${PSQL[@]}" -c "DELETE FROM webhook_subscriptions" >/dev/null
  read -r S3 CPU3 K3 <<<"$(send_once)"
  python3 - "$DEVICES" "$S1" "$CPU1" "$S2" "$CPU2" "$RECEIVED" "$SINKSTATS" "$S3" "$CPU3" "$K1" "$K2" "$K3" <<'PY'
import json, sys
n = int(sys.argv[1]); s1, c1, s2, c2 = map(float, sys.argv[2:6]); got = int(sys.argv[6]); c = json.loads(sys.argv[7])
s3, c3 = map(float, sys.argv[8:10])
k1, k2, k3 = [list(map(float, a.split())) for a in sys.argv[10:13]]
names = ["Postgres", "senders", "gateway", "simulator", "webhooks", "receiver", "of Postgres: the webhooks' sessions"]
# The send itself: Postgres but the webhooks replica's sessions, the senders, the gateway, the
# simulator. The delivery: the webhooks replica and its sessions. Everything: all of it, receiver too.
send = lambda k: k[0] - k[6] + sum(k[1:4])
delivery = lambda k: k[4] + k[6]
everything = lambda k: sum(k[:6])
for label, k in (("without an endpoint", k1), ("with delivery.sent", k2), ("without, again", k3)):
    print("send: %-20s µs per delivery: %s; the send itself %.1f, the webhooks' delivery %.1f, everything %.1f"
          % (label, ", ".join("%s %.1f" % p for p in zip(names, k)), send(k), delivery(k), everything(k)))
mean = lambda f: (f(k1) + f(k3)) / 2
print("send: CPU per delivery with delivery.sent subscribed / without: the send itself %.3f (goal <= 1.10: %s), everything %.3f"
      % (send(k2) / mean(send), "met" if send(k2) / mean(send) <= 1.10 else "NOT met", everything(k2) / mean(everything)))
base = (c1 + c3) / 2
span = max(1e-9, (c["lastAt"] or 0) - (c["firstAt"] or 0))
print("send: without an endpoint %.2f s (%.0f deliveries/s), %.1f µs of machine CPU per delivery; again after: %.2f s (%.0f/s), %.1f µs"
      % (s1, n / s1, c1, s3, n / s3, c3))
print("send: with delivery.sent subscribed %.2f s (%.0f deliveries/s), %.1f µs per delivery: CPU ratio %.3f to the mean of the two without (goal <= 1.10: %s)"
      % (s2, n / s2, c2, c2 / base, "met" if c2 / base <= 1.10 else "NOT met"))
print("send: the receiver got %d of %d deliveries as delivery.sent (%s) in %d requests (%.1f per request), first to last request %.2f s: %.0f deliveries/s (goal >= 20,000: %s)"
      % (got, n, "all" if got == n else "NOT all" if got < n else "MORE than sent", c["requests"], got / max(1, c["requests"]),
         span, got / span, "met" if got / span >= 20000 else "NOT met"))
PY
  exit 0
fi
bk_die "usage: bench/webhooks.sh [seam [EVENTS]] | send [DEVICES]"
