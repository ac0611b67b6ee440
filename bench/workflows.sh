#!/usr/bin/env bash
# Workflows: (1) wake-up lateness of due runs among many waiting ones, against a bare
# `UPDATE … FOR UPDATE SKIP LOCKED` claim loop of the same schedule; (3) trigger events on
# bk:events to runs started, against a bare consumer inserting one row per event. Same run, same
# machine, durable settings (fsync on).
# Usage: bench/workflows.sh [runs] [rate] [seconds] [trigger-events]
#   defaults 1000000 2000 60 200000 (bounded; stops everything it starts)
#        bench/workflows.sh sends [runs, default 100000]: (2) RUNS runs due in the same second,
#        each sending through the send path to its subscriber's one device (workflow_sends below).
# Release binaries go to $BUZZKIT_BENCH_SCRATCH (default .build-release-bench).
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

# (2) RUNS runs of one workflow ("wait 1h, then send to the run's subscriber"; RUNS subscribers with
# one device each), all due in the same second, on the send-path stack of bench/sender_stack.sh
# (release builds, gateway, two apns-sender replicas, the APNs simulator) plus BK_WORKFLOW_REPLICAS
# (default 2) workflow replicas: seconds from that second to the last of their deliveries ended in
# the ledger (written after the simulator's answer), and when the workflow service had fired the
# last run. Baseline in the same run: bench/push_fanout.sh's message to a RUNS-device topic through
# the same stack. Goal: <= 20 s for 100,000 (>= 5,000 workflow sends/s end to end).
# One run is started through POST /v1/workflows/{key}/trigger and waits at its timer; the others
# are copies of its stored state (own id and subscriber), inserted in SQL with the timer due at
# the same second. Knobs: BK_WORKFLOW_ENV (extra VAR=value words for the workflow replicas), the
# stack's (BK_SENDER_ENV, BK_PUSH_NO_BUILD, BK_BIN_DIR), BK_WF_LEAD (seconds from the end of the
# inserts to the due second, default 15).
workflow_sends() {
  local runs="${1:-100000}" replicas="${BK_WORKFLOW_REPLICAS:-2}" r i port reply due before
  source bench/sender_stack.sh
  WORK="$(mktemp -d /tmp/bk-workflow-sends.XXXXXX)"
  PIDS=()
  trap stack_cleanup EXIT
  trap 'exit 130' INT TERM
  if [ -z "${BK_BIN_DIR:-}" ] && [ -z "${BK_PUSH_NO_BUILD:-}" ]; then
    bk_log "building workflow (release)"
    bench_release_build .build-release-push workflow >/dev/null
  fi
  stack_up
  for r in $(seq 1 "$replicas"); do
    port="$(bk_free_port)"
    # shellcheck disable=SC2086
    env BUZZKIT_HTTP_PORT="$port" BUZZKIT_INSTANCE_ID="bench-workflow-$r" BUZZKIT_DB_POOL_SIZE=8 \
      ${BK_WORKFLOW_ENV:-} "$BIN/workflow" >>"$WORK/workflow-$r.log" 2>&1 &
    PIDS+=("$!")
    for i in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
    curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || bk_die "workflow replica $r: $(tail -5 "$WORK/workflow-$r.log")"
  done

  bk_log "inserting $runs one-device subscribers for the runs and a $runs-device topic"
  stack_devices w "$runs"
  stack_devices u "$runs" everyone
  curl -sf -X PUT "$GW_URL/v1/workflows/bench-due" -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" \
    -H 'Content-Type: application/json' \
    -d '{"trigger": {"event": "bench.due"}, "steps": [{"name": "pause", "wait": {"duration": "1h"}},
         {"name": "go", "send": {"title": "Due", "body": "Your run is due", "policy": "ignore"}}]}' >/dev/null \
    || bk_die "PUT /v1/workflows/bench-due failed"
  reply="$(curl -s -X POST "$GW_URL/v1/workflows/bench-due/trigger" -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" \
    -H 'Content-Type: application/json' -d '{"to": "w0000001"}')"
  for i in $(seq 1 300); do
    [ "$("${PSQL[@]}" -c "SELECT count(*) FROM workflow_runs WHERE workflow_key = 'bench-due' AND status = 'running'
      AND timer_due_at IS NOT NULL")" = 1 ] && break
    sleep 0.1
  done
  [ "$i" -lt 300 ] || bk_die "the template run did not start: $reply"

  bk_log "copying it into $runs runs due in the same second"
  "${PSQL[@]}" <<SQL
CREATE TEMP TABLE template AS SELECT * FROM workflow_runs WHERE workflow_key = 'bench-due';
INSERT INTO workflow_runs (id, tenant_id, workflow_key, version, subscriber_id, trigger_key, status, state,
                           reacts_to, timer_token, timer_due_at, wake_at, started_at)
SELECT s.id, t.tenant_id, t.workflow_key, t.version, s.sub, 'bench:' || s.n, 'running',
       jsonb_set(jsonb_set(t.state, '{runId}', to_jsonb(s.id::text)), '{subscriber,id}', to_jsonb(s.sub)),
       t.reacts_to, t.timer_token, t.timer_due_at + interval '1 day', t.timer_due_at + interval '1 day', now()
FROM template t, (SELECT gen_random_uuid() AS id, n, 'w' || lpad(n::text, 7, '0') AS sub
                  FROM generate_series(2, $runs) n) s;
ANALYZE workflow_runs;
SQL
  # The due second: BK_WF_LEAD seconds from now, whole; every run's timer (row and state) moved to it.
  due="$("${PSQL[@]}" -c "SELECT extract(epoch FROM date_trunc('second', now()) + make_interval(secs => ${BK_WF_LEAD:-15}))")"
  "${PSQL[@]}" <<SQL
UPDATE workflow_runs SET
  timer_due_at = to_timestamp($due), wake_at = to_timestamp($due),
  state = jsonb_set(jsonb_set(state, '{timer,dueAt}', to_jsonb(to_char(to_timestamp($due) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))),
                    '{outcomes,0,dueAt}', to_jsonb(to_char(to_timestamp($due) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))
WHERE workflow_key = 'bench-due';
SQL
  local left
  left="$(python3 -c "import time; print(round($due - time.time(), 1))")"
  # Late copies are still measured from the due second (their wait counts); say so.
  python3 -c "import sys; sys.exit(0 if $left > 0 else 1)" \
    || bk_log "warning: moving the timers took longer than BK_WF_LEAD (${BK_WF_LEAD:-15} s); the time still counts from the due second"
  bk_log "$runs runs due at $(date -u -d "@${due%.*}" +%H:%M:%S) UTC, in $left s"
  before="$(stack_sim_accepted)"
  stack_wait_done "tenant_id = '$BUZZKIT_TENANT' AND subscriber_id LIKE 'w%'" "$runs" 1800 "$before"
  local t1 sent fired done_runs
  read -r t1 sent < <("${PSQL[@]}" -F' ' -c "SELECT extract(epoch FROM max(updated_at)), count(*) FILTER (WHERE status = 'sent')
    FROM deliveries WHERE tenant_id = '$BUZZKIT_TENANT' AND subscriber_id LIKE 'w%'")
  read -r fired done_runs < <("${PSQL[@]}" -F' ' -c "SELECT extract(epoch FROM max(updated_at)), count(*) FROM workflow_runs
    WHERE workflow_key = 'bench-due' AND status = 'completed'")

  bk_log "baseline: one message to the $runs-device topic"
  before="$(stack_sim_accepted)"
  local tt0 tt1 id
  tt0="$(date +%s.%N)"
  id="$(stack_post '{"topic":"everyone","title":"Hello","body":"A benchmark push to everyone","data":{"k":1}}')"
  stack_wait_done "message_id = '$id'" "$runs" 1800 "$before"
  tt1="$("${PSQL[@]}" -c "SELECT extract(epoch FROM max(updated_at)) FROM deliveries WHERE message_id = '$id'")"
  python3 - "$runs" "$due" "$t1" "$sent" "$fired" "$done_runs" "$tt0" "$tt1" "$replicas" <<'PY'
import sys
runs, due, t1, sent, fired, done, tt0, tt1 = (float(x) for x in sys.argv[1:9])
replicas = sys.argv[9]
seconds, topic = t1 - due, tt1 - tt0
print(f"workflow sends, {int(runs):,} runs due in one second, {replicas} workflow + 2 sender replicas: "
      f"last delivery ended {seconds:.1f} s after the due second ({runs / seconds:,.0f} sends/s; {int(sent):,} sent); "
      f"the workflow service had fired the last of {int(done):,} runs after {fired - due:.1f} s")
print(f"baseline: topic send, {int(runs):,} devices, same stack: {topic:.1f} s ({runs / topic:,.0f} deliveries/s)")
print(f"ratio: workflow sends take {seconds / topic:.1f}x the topic send's time (rate {topic / seconds:.3f} of it); "
      f"goal <= 20 s for 100,000 (>= 5,000 sends/s): {'met' if runs / seconds >= 5000 else 'NOT met'}")
PY
}

if [ "${1:-}" = "sends" ]; then
  workflow_sends "${2:-100000}"
  exit 0
fi

RUNS="${1:-1000000}"
RATE="${2:-2000}"
SECONDS_DUE="${3:-60}"
TRIGGERS="${4:-200000}"
RUN_DIR="$(mktemp -d /tmp/buzzkit-bench-workflows.XXXXXX)"
chmod 755 "$RUN_DIR"
cleanup() { bk_stop_postgres "$RUN_DIR/pg"; bk_stop_redis "$RUN_DIR/redis"; rm -rf "$RUN_DIR"; }
trap cleanup EXIT

# BK_WORKFLOW_BIN: run that workflow binary instead (e.g. a copy of the one before a change).
if [ -n "${BK_WORKFLOW_BIN:-}" ]; then
  WORKFLOW="$BK_WORKFLOW_BIN"
else
  bk_log "building workflow (release)"
  WORKFLOW="$(bench_release_build "${BUZZKIT_BENCH_SCRATCH:-.build-release-bench}" workflow)/workflow"
fi

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
