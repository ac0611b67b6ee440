#!/usr/bin/env bash
# One-subscriber ("transactional") messages end to end, issue 14's goal 1 and issue 29's: the
# send-path stack of bench/sender_stack.sh (release builds, gateway with rate limiting off, two
# apns-sender replicas, the APNs simulator recording what it accepts). Once per entry of
# BK_APNS_TRANSPORTS (default "nghttp2"; the round labels; a build given with BK_BIN_DIR from before issue 29's
# nghttp2 client was removed can still run its libcurl client with "curl"; the replicas restart
# between rounds, each round has its own subscribers):
#  1. COUNT messages (default 5,000), each `to` its own subscriber with one device, POSTed with 32
#     connections: deliveries/s from the first POST to the last delivery ended in the ledger (and
#     how long the POSTs themselves took), and the CPU each process spent per message;
#  2. the same at RATE messages/s (default 500, 5,000 messages): latency p50/p90/p99/max from the
#     POST's 202 to the APNs request reaching the simulator (its own receivedAt, ms, matched by the
#     message id in the payload), and the senders' CPU per message at that rate;
#  3. with TOPIC_DEVICES > 0: a topic send of that many devices (bench/push_fanout.sh's message)
#     through the same stack, deliveries/s and the senders' CPU per delivery; the ratio is printed.
# Then the simulator's ceiling in the same run (h2load, and its own CPU per request). Counts come
# from the tables and the simulator's record. Goals: >= 5,000/s at <= 400 us of CPU per message,
# p50 < 20 ms, p99 < 100 ms.
# Usage: bench/transactional.sh [count, default 5000] [rate, default 500] [topic devices, default 100000]
# Knobs: see bench/sender_stack.sh (BK_SENDER_ENV, BK_PUSH_NO_BUILD, BK_BIN_DIR); BK_APNS_TRANSPORTS;
# BK_LOAD_CLIENT=PATH: another buzzkit-bench as the load client (an older one, to compare clients);
# BK_PG_STATEMENTS=1: Postgres runs with pg_stat_statements, and step 1 of each round prints the
# statements it ran (calls, time, rows and WAL per message) and the WAL written per message.
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sender_stack.sh"
cd "$BK_ROOT"
if [ -n "${BK_PG_STATEMENTS:-}" ]; then
  BK_PG_OPTIONS="${BK_PG_OPTIONS:-} -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
  export BK_PG_OPTIONS
fi

COUNT="${1:-5000}"; RATE="${2:-500}"; TOPIC_DEVICES="${3:-100000}"
TRANSPORTS="${BK_APNS_TRANSPORTS:-nghttp2}"
stack_start transactional
CLIENT="${BK_LOAD_CLIENT:-$CLIENT}"
[ -n "${BK_PG_STATEMENTS:-}" ] && "${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"

# statements_reset / statements_report N: what Postgres ran between the two, per message (the
# bench's own polling included: its count(*) over deliveries), and the WAL it wrote.
statements_reset() {
  [ -n "${BK_PG_STATEMENTS:-}" ] || return 0
  "${PSQL[@]}" -c "SELECT pg_stat_statements_reset()" >/dev/null
  WAL0="$("${PSQL[@]}" -c "SELECT pg_current_wal_lsn()")"
}
statements_report() {
  [ -n "${BK_PG_STATEMENTS:-}" ] || return 0
  "${PSQL[@]}" -F' | ' -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$WAL0') / $1) || ' bytes of WAL per message'"
  "${PSQL[@]}" -F' | ' -c "SELECT round(calls::numeric / $1, 3) AS calls_per_msg, round((total_exec_time + total_plan_time)::numeric * 1000 / $1) AS us_per_msg,
      round(rows::numeric / greatest(calls, 1), 1) AS rows_per_call, round(wal_bytes::numeric / $1) AS wal_per_msg,
      left(regexp_replace(query, '\s+', ' ', 'g'), 160)
    FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 25"
  "${PSQL[@]}" -F' | ' -c "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables
    WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY relname"
  "${PSQL[@]}" -F' | ' -c "SELECT tablename, indexname, regexp_replace(indexdef, '.* USING ', '') FROM pg_indexes
    WHERE tablename IN ('messages', 'deliveries', 'delivery_payloads', 'delivery_chunks') ORDER BY 1, 2"
}

ROUNDS=0
for _ in $TRANSPORTS; do ROUNDS=$(( ROUNDS + 1 )); done
bk_log "inserting $ROUNDS x ($COUNT + $COUNT) one-device subscribers and a $TOPIC_DEVICES-device topic"
for r in $(seq 1 "$ROUNDS"); do
  stack_devices "a$r" "$COUNT"
  stack_devices "l$r" "$COUNT"
done
[ "$TOPIC_DEVICES" -gt 0 ] && stack_devices u "$TOPIC_DEVICES" everyone

# cpu_now: stack_cpu's processes (postgres, both senders, simulator, redis, gateway) and the machine.
cpu_now() { echo "$(stack_cpu) $(bench_machine_ticks)"; }
# cpu_report BEFORE AFTER N UNIT: each process's CPU per unit, our stack's total and the machine's.
cpu_report() {
  python3 - "$1" "$2" "$3" "$4" "$(getconf CLK_TCK)" <<'PY'
import sys
a, b = [list(map(int, x.split())) for x in sys.argv[1:3]]
n, unit, hz = int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
names = ["postgres", "apns-sender x2", "apns-sim", "redis", "gateway"]
per = [(y - x) / hz * 1e6 / n for x, y in zip(a, b)]
print("CPU per %s (us): %s; stack %.0f; whole machine %.0f (others, the load client included, %.0f)"
      % (unit, ", ".join("%s %.0f" % (k, v) for k, v in zip(names, per)), sum(per[:5]), per[5], max(0, per[5] - sum(per[:5]))))
PY
}

SUMMARY=()
r=0
for transport in $TRANSPORTS; do
  r=$(( r + 1 ))
  stack_restart_replicas "$transport"

  # 1. Throughput: as fast as 32 connections POST (buzzkit-bench post-messages: libcurl underneath;
  # a Python client could not post more than about 1,700 a second on this machine).
  bk_log "round $r ($transport) 1: $COUNT one-subscriber messages, 32 connections ($(bench_load_note))"
  BEFORE="$(stack_sim_accepted)"
  statements_reset
  CPU0="$(cpu_now)"
  read -r T0 POSTS_DONE < <(/usr/bin/time -f "%U %S" -o "$WORK/client.$r.time" "$CLIENT" post-messages "$GW_URL" "$BUZZKIT_TENANT_KEY" "a$r" "$COUNT" 32 0 "$WORK/burst.$r.txt")
  COUNT_A="$(wc -l <"$WORK/burst.$r.txt")"
  stack_wait_done "tenant_id = '$BUZZKIT_TENANT' AND subscriber_id LIKE 'a$r%'" "$COUNT_A" 600 "$BEFORE"
  CPU1="$(cpu_now)"
  read -r T1 SENT_A < <("${PSQL[@]}" -F' ' -c "SELECT extract(epoch FROM max(updated_at)), count(*) FILTER (WHERE status = 'sent')
    FROM deliveries WHERE tenant_id = '$BUZZKIT_TENANT' AND subscriber_id LIKE 'a$r%'")
  ONE_RPS="$(python3 -c "print(round($COUNT_A / ($T1 - $T0)))")"
  ONE_CPU="$(cpu_report "$CPU0" "$CPU1" "$COUNT_A" message); the load client $(python3 -c "import sys; u, s = map(float, open(sys.argv[1]).read().split()[-2:]); print(round((u + s) * 1e6 / $COUNT_A))" "$WORK/client.$r.time") us"
  statements_report "$COUNT_A" >&2

  # 2. Latency at a steady rate.
  bk_log "round $r ($transport) 2: $COUNT one-subscriber messages at $RATE/s"
  BEFORE="$(stack_sim_accepted)"
  CPU0="$(cpu_now)"
  "$CLIENT" post-messages "$GW_URL" "$BUZZKIT_TENANT_KEY" "l$r" "$COUNT" 16 "$RATE" "$WORK/paced.$r.txt" >/dev/null
  stack_wait_done "tenant_id = '$BUZZKIT_TENANT' AND subscriber_id LIKE 'l$r%'" "$COUNT" 600 "$BEFORE"
  PACED_CPU="$(cpu_report "$CPU0" "$(cpu_now)" "$COUNT" message)"
  curl -sf "$SIM_CONTROL/control/pushes?limit=$(( 4 * COUNT + 10 ))" >"$WORK/pushes.json"
  LATENCY="$(python3 - "$WORK/paced.$r.txt" "$WORK/pushes.json" <<'PY'
import json, sys
answered = {}
for line in open(sys.argv[1]):
    mid, at = line.split()
    answered[mid.lower()] = float(at)
lat = []
for push in json.load(open(sys.argv[2])):
    mid = (json.loads(push["payload"]).get("bk", {}).get("messageId") or "").lower()
    if mid in answered:
        lat.append(push["receivedAt"] - answered.pop(mid) * 1000)
lat.sort()
if not lat:
    sys.exit("no paced push reached the simulator")
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
print("p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms (%d pushes matched, %d missing)"
      % (pick(0.5), pick(0.9), pick(0.99), lat[-1], len(lat), len(answered)))
PY
)"

  # 3. Baseline: the topic send of bench/push_fanout.sh through the same stack.
  TOPIC_LINE="no topic send (topic devices 0)"
  if [ "$TOPIC_DEVICES" -gt 0 ]; then
    bk_log "round $r ($transport) 3: one message to the $TOPIC_DEVICES-device topic"
    BEFORE="$(stack_sim_accepted)"
    CPU0="$(cpu_now)"
    TT0="$(date +%s.%N)"
    ID="$(stack_post '{"topic":"everyone","title":"Hello","body":"A benchmark push to everyone","data":{"k":1}}')"
    stack_wait_done "message_id = '$ID'" "$TOPIC_DEVICES" 600 "$BEFORE"
    TOPIC_CPU="$(cpu_report "$CPU0" "$(cpu_now)" "$TOPIC_DEVICES" delivery)"
    TT1="$("${PSQL[@]}" -c "SELECT extract(epoch FROM max(updated_at)) FROM deliveries WHERE message_id = '$ID'")"
    TOPIC_RPS="$(python3 -c "print(round($TOPIC_DEVICES / ($TT1 - $TT0)))")"
    TOPIC_LINE="topic send, $TOPIC_DEVICES devices: $TOPIC_RPS deliveries/s; $TOPIC_CPU; one-subscriber rate = $(python3 -c "print('%.1f%%' % (100.0 * $ONE_RPS / $TOPIC_RPS))") of it"
  fi
  SUMMARY+=("$transport: one-subscriber messages, $COUNT_A with 32 connections: $ONE_RPS deliveries/s (first POST to last ledger row; $SENT_A sent; the POSTs took $(python3 -c "print(round($POSTS_DONE - $T0, 2))") s)"
    "  $ONE_CPU"
    "  latency at $RATE messages/s, POST's 202 to the request at the simulator: $LATENCY"
    "  at $RATE/s: $PACED_CPU"
    "  $TOPIC_LINE")
  printf '%s\n' "${SUMMARY[@]: -5}" >&2
done

bk_log "simulator ceiling: h2load, 4 connections x 100 streams, same simulator process (recording) ($(bench_load_note))"
read -r SIM_RPS H2LOAD_US < <(bench_h2load_ceiling "${SIM_URL##*:}" "$WORK/provider.ec.pem" BENCHKEY01 BENCHTEAM1)
printf '%s\n' "${SUMMARY[@]}"
echo "apns-sim ceiling (h2load 4x100, same process, recording): $SIM_RPS requests/s; h2load's own CPU $H2LOAD_US us per request"
echo "goals: >= 5000 messages/s at <= 400 us of CPU per message (stack); at 500/s p50 < 20 ms, p99 < 100 ms"
