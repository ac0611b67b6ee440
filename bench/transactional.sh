#!/usr/bin/env bash
# One-subscriber ("transactional") messages end to end, issue 14's goal 1: the send-path stack of
# bench/sender_stack.sh (release builds, gateway with rate limiting off, two apns-sender replicas,
# the APNs simulator recording what it accepts), then in the same run:
#  1. COUNT messages (default 5,000), each `to` its own subscriber with one device, POSTed with 32
#     connections: deliveries/s from the first POST to the last delivery ended in the ledger (and
#     how long the POSTs themselves took);
#  2. the same at RATE messages/s (default 500, 5,000 messages): latency p50/p90/p99/max from the
#     POST's 202 to the APNs request reaching the simulator (its own receivedAt, ms, matched by the
#     message id in the payload);
#  3. the baseline: a 100,000-device topic send (bench/push_fanout.sh's message) through the same
#     stack, deliveries/s from the POST to the last ledger row; the ratio is printed.
# Counts come from the tables and the simulator's record. Goal: >= 5,000/s, p50 < 20 ms, p99 < 100 ms.
# Usage: bench/transactional.sh [count, default 5000] [rate, default 500] [topic devices, default 100000]
# Knobs: see bench/sender_stack.sh (BK_SENDER_ENV, BK_PUSH_NO_BUILD).
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sender_stack.sh"
cd "$BK_ROOT"

COUNT="${1:-5000}"; RATE="${2:-500}"; TOPIC_DEVICES="${3:-100000}"
WORK="$(mktemp -d /tmp/bk-transactional.XXXXXX)"
PIDS=()
trap stack_cleanup EXIT
trap 'exit 130' INT TERM
stack_up

bk_log "inserting $COUNT + $COUNT one-device subscribers and a $TOPIC_DEVICES-device topic"
stack_devices a "$COUNT"
stack_devices l "$COUNT"
stack_devices u "$TOPIC_DEVICES" everyone

# 1. Throughput: as fast as 32 connections POST (buzzkit-bench post-messages: libcurl underneath;
# a Python client could not post more than about 1,700 a second on this machine).
bk_log "1/3: $COUNT one-subscriber messages, 32 connections"
BEFORE="$(stack_sim_accepted)"
CPU0="$(stack_cpu)"
read -r T0 POSTS_DONE < <("$CLIENT" post-messages "$GW_URL" "$BUZZKIT_TENANT_KEY" a "$COUNT" 32 0 "$WORK/burst.txt")
POSTED="$(wc -l <"$WORK/burst.txt")"
COUNT_A="$POSTED"
stack_wait_done "tenant_id = '$BUZZKIT_TENANT' AND subscriber_id LIKE 'a%'" "$COUNT_A" 600 "$BEFORE"
read -r T1 SENT_A < <("${PSQL[@]}" -F' ' -c "SELECT extract(epoch FROM max(updated_at)), count(*) FILTER (WHERE status = 'sent')
  FROM deliveries WHERE tenant_id = '$BUZZKIT_TENANT' AND subscriber_id LIKE 'a%'")
ONE_RPS="$(python3 -c "print(round($COUNT_A / ($T1 - $T0)))")"
ONE_CPU="$(stack_cpu_report "$CPU0" "$(stack_cpu)" "$COUNT_A" message)"

# 2. Latency at a steady rate.
bk_log "2/3: $COUNT one-subscriber messages at $RATE/s"
BEFORE="$(stack_sim_accepted)"
"$CLIENT" post-messages "$GW_URL" "$BUZZKIT_TENANT_KEY" l "$COUNT" 16 "$RATE" "$WORK/paced.txt" >/dev/null
stack_wait_done "tenant_id = '$BUZZKIT_TENANT' AND subscriber_id LIKE 'l%'" "$COUNT" 600 "$BEFORE"
curl -sf "$SIM_CONTROL/control/pushes?limit=$(( 2 * COUNT + 10 ))" >"$WORK/pushes.json"
LATENCY="$(python3 - "$WORK/paced.txt" "$WORK/pushes.json" <<'PY'
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
bk_log "3/3: one message to the $TOPIC_DEVICES-device topic"
BEFORE="$(stack_sim_accepted)"
TT0="$(date +%s.%N)"
ID="$(stack_post '{"topic":"everyone","title":"Hello","body":"A benchmark push to everyone","data":{"k":1}}')"
stack_wait_done "message_id = '$ID'" "$TOPIC_DEVICES" 600 "$BEFORE"
TT1="$("${PSQL[@]}" -c "SELECT extract(epoch FROM max(updated_at)) FROM deliveries WHERE message_id = '$ID'")"
TOPIC_RPS="$(python3 -c "print(round($TOPIC_DEVICES / ($TT1 - $TT0)))")"

echo "one-subscriber messages, $COUNT_A with 32 connections, 2 replicas: $ONE_RPS deliveries/s (first POST to last ledger row; $SENT_A sent; the POSTs took $(python3 -c "print(round($POSTS_DONE - $T0, 2))") s)"
echo "$ONE_CPU (the load client's own CPU not counted)"
echo "latency at $RATE messages/s, POST's 202 to the request at the simulator: $LATENCY"
echo "baseline: topic send, $TOPIC_DEVICES devices, same stack:           $TOPIC_RPS deliveries/s"
python3 -c "print('ratio: one-subscriber rate is %.1f%% of the topic rate (goal: >= 5000/s, p50 < 20 ms, p99 < 100 ms)' % (100.0 * $ONE_RPS / $TOPIC_RPS))"
