#!/usr/bin/env bash
# A sender killed mid-send, issue 14's goal 3: the send-path stack of bench/sender_stack.sh (two
# apns-sender replicas, the APNs simulator recording every push it accepts), a 100,000-device
# topic, then ROUNDS rounds (default 3) of: reset the simulator's record, delay its answers (so
# pushes are in flight), POST one message to the topic, kill -9 one replica (a, b, a, ...) once
# the simulator has accepted half the devices, wait until every delivery has ended, restart it.
# Per round, counted from the simulator's record and the tables (never from statistics):
#   missing    devices with no accepted push                                          (goal 0)
#   doubled    devices with two or more accepted pushes under different collapse ids,
#              or without one                                                         (goal 0)
#   disagree   deliveries whose ledger disagrees with the simulator: `sent` but not accepted
#              (or accepted under another apns-id), accepted but not `sent`           (goal 0)
#   and the deliveries/s from the POST to the last ledger row, the deliveries by status, the
#   devices that got the same push twice under one collapse id (what the phone shows once), and
#   the senders' CPU per delivery (the killed replica's up to its kill).
# The rounds run once per entry of BK_APNS_TRANSPORTS (default "nghttp2"; the round labels; a build given with BK_BIN_DIR from before issue 29's
# nghttp2 client was removed can still run its libcurl client with "curl"), then the simulator's h2load ceiling.
# Usage: bench/chaos_sender.sh [devices, default 100000] [rounds per transport, default 3]
# Knobs: BK_CHAOS_DELAY_MS (simulator answer delay, default 100); BK_SENDER_ENV (default: claim
# idle 5 s, reclaim every 1 s, stale sending 10 s, outbox sweep every 1 s, requeue after 5 s, so a
# dead replica's work is taken over within seconds); BK_PUSH_NO_BUILD=1.
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sender_stack.sh"
cd "$BK_ROOT"

DEVICES="${1:-100000}"; ROUNDS="${2:-3}"; DELAY_MS="${BK_CHAOS_DELAY_MS:-100}"
TRANSPORTS="${BK_APNS_TRANSPORTS:-nghttp2}"
: "${BK_SENDER_ENV:=BUZZKIT_SENDER_CLAIM_IDLE=5s BUZZKIT_SENDER_RECLAIM_INTERVAL=1s BUZZKIT_SENDER_STALE_SENDING=10s BUZZKIT_OUTBOX_SWEEP_INTERVAL=1s BUZZKIT_OUTBOX_REQUEUE_AFTER=5s}"
BASE_SENDER_ENV="$BK_SENDER_ENV"
export BK_SENDER_ENV
stack_start chaos-sender
bk_log "inserting a topic of $DEVICES devices"
stack_devices u "$DEVICES" everyone
"${PSQL[@]}" -c "COPY (SELECT token FROM devices WHERE tenant_id = '$BUZZKIT_TENANT') TO STDOUT" >"$WORK/devices.txt"

# One round's verdict from the simulator's record and the ledger (see the header).
cat >"$WORK/judge.py" <<'PY'
import collections, json, sys
round_, victim, devices_file, pushes_file, ledger_file = sys.argv[1:6]
n, t0, t1 = int(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
sender_ticks, hz = int(sys.argv[9]), int(sys.argv[10])
devices = [line.strip().lower() for line in open(devices_file) if line.strip()]
accepted = collections.defaultdict(list)
for push in json.load(open(pushes_file)):
    accepted[push["token"].lower()].append(((push.get("collapseId") or None), push["apnsId"].lower()))
missing = sum(1 for d in devices if d not in accepted)
doubled = same = 0
for pushes in accepted.values():
    if len(pushes) > 1:
        ids = {c for c, _ in pushes}
        if None in ids or len(ids) > 1:
            doubled += 1
        else:
            same += 1
disagree = 0
statuses = collections.Counter()
for line in open(ledger_file):
    token, status, code, apns_id = line.rstrip("\n").split("\t")
    statuses[status + ("/" + code if code else "")] += 1
    got = accepted.get(token.lower(), [])
    if status == "sent":
        if not any(a == apns_id.lower() for _, a in got):
            disagree += 1
    elif got:
        disagree += 1
print("round %s (killed %s): missing %d, doubled %d, disagree %d; %.0f deliveries/s; senders %.0f us per delivery; %s; same push twice under one collapse id: %d"
      % (round_, victim, missing, doubled, disagree, n / (t1 - t0), sender_ticks / hz * 1e6 / n,
         ", ".join("%s %d" % kv for kv in sorted(statuses.items())), same))
PY
RESULTS=()
round=0
for transport in $TRANSPORTS; do
BK_SENDER_ENV="$BASE_SENDER_ENV BUZZKIT_APNS_TRANSPORT=$transport"
stack_restart_replicas "$transport"
for _ in $(seq 1 "$ROUNDS"); do
  round=$(( round + 1 ))
  victim=$([ $(( round % 2 )) -eq 1 ] && echo a || echo b)
  survivor=$([ "$victim" = a ] && echo b || echo a)
  curl -sf -X POST "$SIM_CONTROL/control/reset" >/dev/null
  curl -sf -X POST "$SIM_CONTROL/control/delay" -d "{\"ms\":$DELAY_MS}" >/dev/null
  bk_log "round $round ($transport): one message to $DEVICES devices, kill -9 of replica $victim at half ($(bench_load_note))"
  VICTIM0="$(bench_ticks "${SENDER_PID[$victim]}")"; SURVIVOR0="$(bench_ticks "${SENDER_PID[$survivor]}")"
  T0="$(date +%s.%N)"
  ID="$(stack_post "{\"topic\":\"everyone\",\"title\":\"Round $round\",\"body\":\"A chaos push\"}")"
  deadline=$(( $(date +%s) + 300 ))
  until [ "$(stack_sim_accepted)" -ge $(( DEVICES / 2 )) ]; do
    [ "$(date +%s)" -lt "$deadline" ] || bk_die "round $round: the simulator never reached half"
    sleep 0.05
  done
  VICTIM1="$(bench_ticks "${SENDER_PID[$victim]}")"
  kill -9 "${SENDER_PID[$victim]}"
  wait "${SENDER_PID[$victim]}" 2>/dev/null || true
  unset "SENDER_PID[$victim]"
  stack_wait_done "message_id = '$ID'" "$DEVICES" 600
  T1="$("${PSQL[@]}" -c "SELECT extract(epoch FROM max(updated_at)) FROM deliveries WHERE message_id = '$ID'")"
  SENDER_TICKS=$(( VICTIM1 - VICTIM0 + $(bench_ticks "${SENDER_PID[$survivor]}") - SURVIVOR0 ))
  curl -sf -X POST "$SIM_CONTROL/control/delay" -d '{"ms":0}' >/dev/null
  sleep 1  # answers still on their way to a replica are recorded by the simulator already
  curl -sf "$SIM_CONTROL/control/pushes?limit=$(( 3 * DEVICES ))" >"$WORK/pushes.json"
  "${PSQL[@]}" -c "COPY (SELECT device_token, status, coalesce(error_code, ''), coalesce(apns_id, id) FROM deliveries WHERE message_id = '$ID') TO STDOUT" >"$WORK/ledger.tsv"
  RESULTS+=("$transport: $(python3 "$WORK/judge.py" "$round" "$victim" "$WORK/devices.txt" "$WORK/pushes.json" "$WORK/ledger.tsv" "$DEVICES" "$T0" "$T1" "$SENDER_TICKS" "$(getconf CLK_TCK)")")
  echo "${RESULTS[-1]}" >&2
  stack_start_replica "$victim"
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:${SENDER_PORT[$victim]}/readyz" >/dev/null && break; sleep 0.1; done
done
done
curl -sf -X POST "$SIM_CONTROL/control/reset" >/dev/null
bk_log "simulator ceiling: h2load, 4 connections x 100 streams, same simulator process (recording) ($(bench_load_note))"
read -r SIM_RPS H2LOAD_US < <(bench_h2load_ceiling "${SIM_URL##*:}" "$WORK/provider.ec.pem" BENCHKEY01 BENCHTEAM1)
printf '%s\n' "${RESULTS[@]}"
echo "apns-sim ceiling (h2load 4x100, same process, recording): $SIM_RPS requests/s; h2load's own CPU $H2LOAD_US us per request"
