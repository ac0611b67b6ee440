#!/usr/bin/env bash
# Push fan-out end to end: a topic of 100,000 devices (bulk-inserted in SQL), ONE message through
# the gateway, two apns-sender replicas against the APNs simulator (--no-record), all release
# builds on loopback. Measures deliveries/s from the POST (taken just before curl sends it) to the
# last ledger row (the start of the transaction that recorded the last delivery; the message's
# completion follows a few ms later and is printed with BK_PUSH_TIMELINE) and the CPU each
# process spent per delivery, once per entry of BK_APNS_TRANSPORTS (default "nghttp2 nghttp2":
# the round labels; an older build given with BK_BIN_DIR that still has the libcurl client runs it
# with "curl"; the replicas restart between rounds, each round is a new message to the same
# topic). Right after each round, issue 29's raw
# Go client (bench/baseline/apns_go: net/http's HTTP/2 as Go's apns2 and gorush use it, no
# ledger) sends as many pushes as the round had devices to the same simulator (its rate from its
# first request to its last answer, and its and the simulator's CPU per push; BK_PUSH_NO_GO=1
# skips it, BK_PUSH_GO_PUSHES="100000 200000" runs it once per count), and the round's rate and
# CPU per delivery are printed against that run. Every round and every Go run starts on a quiet
# machine (bench_wait_quiet); the run is waited on by one python process polling the replicas'
# counters (bench/push_timeline.py), not a loop of curl. At the end, the simulator's own ceiling
# with h2load (4 connections x 100 streams) and h2load's CPU per request: what a C client on
# nghttp2 costs, the floor for ours.
# BK_PUSH_TIMELINE=1 also samples the machine every 100 ms through each round and prints its
# timeline (pushes sent, deliveries recorded, chunks enqueued/read/pending, each process's CPU)
# and its phases (start: POST to first push; body; tail: 90% recorded to the last row) with how
# busy the two cores were in each. BK_PUSH_SENDERS="DIR_A DIR_B DIR_B DIR_A" runs one round per
# entry with that build's apns-sender (everything else from BK_BIN_DIR or this tree), for an A/B of
# the sender alone in one sitting; "DIR?NAME=VALUE&NAME=VALUE" adds settings to a round's replicas.
# Usage: bench/push_fanout.sh [devices, default 100000]. Stops everything it starts.
# Also printed per round: WAL bytes per delivery, attempts that got no answer (by error), APNs
# latency percentiles, abnormal connection ends the simulator saw, and each replica's stage times;
# the load on the machine before each round (other builds share it: CPU per delivery is the
# figure to compare, the rate moves with the load).
# Knobs (unset: each build's own defaults, so an A/B compares the builds as they ship):
# BK_SENDER_CONCURRENCY, BK_SENDER_CHUNK_SIZE, BK_FANOUT_PAGE_SIZE, BK_APNS_TCP_NODELAY; BK_APNS_TRANSPORTS (above); BK_PUSH_PROFILE=DIR records 6 s of
# `perf record -a -g` into DIR per round; BK_PUSH_NO_BUILD=1 reuses the binaries in
# .build-release-push; BK_BIN_DIR=DIR runs the release binaries in DIR instead (another
# checkout's: before/after; builds without the transport setting run their own client each
# round); BK_PUSH_WALDUMP=1 prints the WAL of each send by record type (pg_waldump --stats=record).
# BK_PUSH_POLICY=1 (issue 26's figure) adds, after the transport rounds, two rounds on the last
# transport: the same send again without a category, then one in category `news`, which a third of
# the subscribers switched off, under a cap of 3 a day per subscriber that already counts two earlier
# sends (so the cap is read, locked and appended for every other subscriber, and lets them through);
# it prints both rounds' CPU per device, the ratio (goal <= 1.10) and the APNs requests of each
# (the suppressed third must cost none).
# BK_PUSH_STATEMENTS=1 (with BK_PG_OPTIONS="-c shared_preload_libraries=pg_stat_statements") prints
# each round's top statements by Postgres time (reset before the round; with
# `-c pg_stat_statements.track_planning=on` also their planning time); BK_PUSH_PG_PERF=DIR records
# each whole round's Postgres stacks (`perf record -e cpu-clock -g -a`, read with
# `perf report --comms postgres`) into DIR.
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

DEVICES="${1:-100000}"
TRANSPORTS="${BK_APNS_TRANSPORTS:-nghttp2 nghttp2}"
command -v h2load >/dev/null || bk_die "h2load missing (apt-get install nghttp2-client)"
WORK="$(mktemp -d /tmp/bk-push-bench.XXXXXX)"
PIDS=()
SENDER_PIDS=()
PGPORT="$(bk_free_port)"; REDISPORT="$(bk_free_port)"
cleanup() {
  for pid in "${SENDER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
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

# No timed checkpoint within the sitting (one landing in a round inflated its WAL by 40% with
# full-page writes and its Postgres CPU by a quarter); one is forced after the seeding instead.
export BK_PG_OPTIONS="-c checkpoint_timeout=1h ${BK_PG_OPTIONS:-}" BK_PG_MAX_WAL_SIZE="${BK_PG_MAX_WAL_SIZE:-4GB}"
bench_bootstrap_stack "$PGPORT" "$REDISPORT"

bk_log "inserting $DEVICES subscribers, devices and topic subscriptions"
bench_seed_topic "$DEVICES"
"${PSQL[@]}" -c "CHECKPOINT" >/dev/null

bk_log "starting apns-sim (--no-record, 1 thread) and the gateway"
"$BIN/apns-sim" --port 0 --control-port 0 --cert "$WORK/certs/cert.pem" --key "$WORK/certs/key.pem" \
  --key "BENCHKEY01=BENCHTEAM1:$WORK/provider.pub.pem" --no-record --threads 1 >"$WORK/sim.out" 2>&1 &
SIM_PID=$!; PIDS+=("$SIM_PID")
for _ in $(seq 1 100); do grep -q 'listening on' "$WORK/sim.out" && break; sleep 0.1; done
SIMPORT="$(sed -nE 's/.*listening on [^:]+:([0-9]+) control.*/\1/p' "$WORK/sim.out")"
[ -n "$SIMPORT" ] || bk_die "apns-sim did not start: $(cat "$WORK/sim.out")"

GWPORT="$(bk_free_port)"
BUZZKIT_HTTP_PORT="$GWPORT" BUZZKIT_RATE_LIMIT_ENABLED=false "$BIN/gateway" >"$WORK/gateway.log" 2>&1 &
GW_PID=$!; PIDS+=("$GW_PID")
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$GWPORT/readyz" >/dev/null && break; sleep 0.1; done

SENDER_PORTS=("$(bk_free_port)" "$(bk_free_port)")
# start_senders TRANSPORT [DIR]: the two replicas, with that APNs transport (the apns-sender of DIR
# when given, else of $BIN).
start_senders() {
  local transport="$1" senders="${2:-$BIN}" i r extra=()
  # DIR?NAME=VALUE&NAME=VALUE: that round's replicas with those settings added.
  if [[ "$senders" == *\?* ]]; then IFS='&' read -r -a extra <<<"${senders#*\?}"; senders="${senders%%\?*}"; fi
  SENDER_PIDS=()
  for i in 0 1; do
    r=$([ "$i" = 0 ] && echo a || echo b)
    BUZZKIT_HTTP_PORT="${SENDER_PORTS[$i]}" BUZZKIT_INSTANCE_ID="bench-sender-$r" \
      BUZZKIT_APNS_SANDBOX_URL="https://127.0.0.1:$SIMPORT" BUZZKIT_APNS_CA_FILE="$WORK/certs/ca.pem" \
      BUZZKIT_APNS_TRANSPORT="$transport" \
      BUZZKIT_DB_POOL_SIZE=8 \
      env ${BK_SENDER_CONCURRENCY:+BUZZKIT_SENDER_CONCURRENCY="$BK_SENDER_CONCURRENCY"} \
      ${BK_SENDER_CHUNK_SIZE:+BUZZKIT_SENDER_CHUNK_SIZE="$BK_SENDER_CHUNK_SIZE"} \
      ${BK_APNS_TCP_NODELAY:+BUZZKIT_APNS_TCP_NODELAY="$BK_APNS_TCP_NODELAY"} \
      ${BK_FANOUT_PAGE_SIZE:+BUZZKIT_FANOUT_PAGE_SIZE="$BK_FANOUT_PAGE_SIZE"} \
      "${extra[@]}" "$senders/apns-sender" >>"$WORK/sender-$r.log" 2>&1 &
    SENDER_PIDS+=($!)
  done
  for port in "${SENDER_PORTS[@]}"; do
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  done
  sleep 1
}
stop_senders() {
  local pid
  for pid in "${SENDER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${SENDER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  SENDER_PIDS=()
}

# CPU ticks (user + system) of postgres (the postmaster and all its children), the senders, the
# simulator, redis, the gateway, and of the whole machine: read before and after a send, so the
# figures say where the machine's two cores went.
cpu_snapshot() {
  echo "$(bench_ticks $(bench_pg_pids "$WORK/pg/data")) $(bench_ticks "${SENDER_PIDS[@]}") $(bench_ticks "$SIM_PID") $(bench_ticks "$(cat "$WORK/redis/redis.pid")") $(bench_ticks "$GW_PID") $(bench_machine_ticks)"
}

# seed_policy: category `news` (enabled by default), switched off by every third subscriber; a cap
# of 3 a day on it; two earlier `news` sends counted for every subscriber an hour ago.
seed_policy() {
  "${PSQL[@]}" <<SQL
INSERT INTO categories (tenant_id, key, name) VALUES ('$BUZZKIT_TENANT', 'news', 'News');
INSERT INTO subscriber_category_preferences (tenant_id, subscriber_id, category_key, enabled)
  SELECT '$BUZZKIT_TENANT', 'u' || lpad(n::text, 7, '0'), 'news', false FROM generate_series(3, $DEVICES, 3) n;
INSERT INTO frequency_caps (tenant_id, position, category_key, max_count, window_seconds)
  VALUES ('$BUZZKIT_TENANT', 0, 'news', 3, 86400);
SQL
  # The counters as the binaries' schema keeps them: parallel arrays since migration 0029, one
  # bk_cap_send[] before (another build's binaries, for a before/after in one sitting).
  if [ "$("${PSQL[@]}" -c "SELECT count(*) FROM information_schema.columns WHERE table_name = 'frequency_cap_counters' AND column_name = 'sent_at'")" = 1 ]; then
    "${PSQL[@]}" <<SQL
INSERT INTO frequency_cap_counters (tenant_id, subscriber_id, sent_at, messages, categories)
  SELECT '$BUZZKIT_TENANT', 'u' || lpad(n::text, 7, '0'), ARRAY[now() - interval '1 hour', now() - interval '50 minutes'],
         ARRAY[gen_random_uuid(), gen_random_uuid()], '{news,news}'
  FROM generate_series(1, $DEVICES) n;
SQL
  else
    "${PSQL[@]}" <<SQL
INSERT INTO frequency_cap_counters (tenant_id, subscriber_id, sends)
  SELECT '$BUZZKIT_TENANT', 'u' || lpad(n::text, 7, '0'),
         ARRAY[(now() - interval '1 hour', 'news', gen_random_uuid())::bk_cap_send,
               (now() - interval '50 minutes', 'news', gen_random_uuid())::bk_cap_send]
  FROM generate_series(1, $DEVICES) n;
SQL
  fi
  "${PSQL[@]}" -c "ANALYZE" >/dev/null
}

# send_round TRANSPORT [CATEGORY]: one message to the topic with the replicas on TRANSPORT (in
# CATEGORY when given); appends the round's summary line to SUMMARY.
SUMMARY=()
round=0
send_round() {
  local transport="$1" category="${2:-}" senders="${3:-}" id reply deadline done_count t0 t1 sent rps cpu0 cpu1 wal0 wal1 wal_bytes line
  local body='{"topic":"everyone","title":"Hello","body":"A benchmark push to everyone","data":{"k":1}'
  if [ -n "$category" ]; then body="$body,\"category\":\"$category\"}"; else body="$body}"; fi
  round=$(( round + 1 ))
  start_senders "$transport" "$senders"
  bench_wait_quiet
  bk_log "round $round ($transport): one message to topic 'everyone' ($(bench_load_note))"
  if [ -n "${BK_PUSH_STATEMENTS:-}" ]; then
    "${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()" >/dev/null
  fi
  local perf_pid=""
  if [ -n "${BK_PUSH_PG_PERF:-}" ]; then
    mkdir -p "$BK_PUSH_PG_PERF"
    perf record -e cpu-clock -F 999 -g -a -o "$BK_PUSH_PG_PERF/perf.$round.${category:-plain}.data" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  wal0="$("${PSQL[@]}" -c "SELECT pg_current_wal_lsn()")"
  if [ -n "${BK_PUSH_PROFILE:-}" ]; then
    # Diagnostics only (perf costs a few percent): 6 s of every process's stacks, machine-wide
    # (`-p` would miss the threads a replica starts later, such as its HTTP/2 client thread).
    mkdir -p "$BK_PUSH_PROFILE"
    perf record -F 499 -a -g -o "$BK_PUSH_PROFILE/perf.$round.$transport.data" -- sleep 6 >/dev/null 2>&1 &
    echo "sender-a ${SENDER_PIDS[0]} sender-b ${SENDER_PIDS[1]} sim $SIM_PID gateway $GW_PID" >"$BK_PUSH_PROFILE/pids.$round"
  fi
  # The waiter (and, with BK_PUSH_TIMELINE=1, the sampler) is one process started before the
  # POST: polling in the run costs it almost nothing (the curl-and-awk loop it replaced took
  # about 10 us of the machine's CPU per delivery from the run it timed).
  local waiter samples=""
  [ -z "${BK_PUSH_TIMELINE:-}" ] || samples="$WORK/timeline.$round.jsonl"
  python3 "$BK_ROOT/bench/push_timeline.py" wait "ports=$(IFS=,; echo "${SENDER_PORTS[*]}")" "devices=$DEVICES" \
    ${samples:+"samples=$samples" "redis=$REDISPORT" "postmaster=$(head -1 "$WORK/pg/data/postmaster.pid")" \
      "pids=senders:$(IFS=,; echo "${SENDER_PIDS[*]}");sim:$SIM_PID;redis:$(cat "$WORK/redis/redis.pid");gateway:$GW_PID"} &
  waiter=$!
  sleep 0.3
  cpu0="$(cpu_snapshot)"
  t0="$(date +%s.%N)"
  reply="$(curl -sf -X POST "http://127.0.0.1:$GWPORT/v1/messages" -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" \
    -H 'Content-Type: application/json' -d "$body")"
  wait "$waiter" || bk_die "the send did not finish"
  cpu1="$(cpu_snapshot)"
  id="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["id"])' "$reply")"
  for _ in $(seq 1 100); do
    done_count="$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE message_id = '$id' AND status NOT IN ('queued', 'sending')")"
    [ "$done_count" -ge "$DEVICES" ] && break
    sleep 0.1
  done
  [ "$done_count" -ge "$DEVICES" ] || bk_die "only $done_count of $DEVICES deliveries in the ledger"
  t1="$("${PSQL[@]}" -c "SELECT extract(epoch FROM max(updated_at)) FROM deliveries WHERE message_id = '$id'")"
  sent="$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE message_id = '$id' AND status = 'sent'")"
  rps="$(python3 -c "print(round($DEVICES / ($t1 - $t0)))")"
  wal1="$("${PSQL[@]}" -c "SELECT pg_current_wal_lsn()")"
  if [ -n "$perf_pid" ]; then kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true; fi
  if [ -n "${BK_PUSH_STATEMENTS:-}" ]; then
    "${PSQL[@]}" -P pager=off -F' | ' >&2 -c "SELECT calls, round(total_exec_time) AS ms, round(total_plan_time) AS plan_ms, round((total_exec_time / NULLIF(calls, 0))::numeric, 3) AS ms_per_call,
        rows, wal_bytes, left(regexp_replace(query, '\s+', ' ', 'g'), 160) FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 14"
  fi
  wal_bytes="$("${PSQL[@]}" -c "SELECT '$wal1'::pg_lsn - '$wal0'::pg_lsn")"
  if [ -n "${BK_PUSH_WALDUMP:-}" ]; then
    # Where the WAL went, by record type (e.g. Heap/INSERT, Heap/HOT_UPDATE, Btree/INSERT_LEAF),
    # with bytes per delivery: the largest ten.
    bk_as_pg_user "$(bk_pg_bindir)/pg_waldump" --stats=record -p "$WORK/pg/data/pg_wal" -s "$wal0" -e "$wal1" 2>/dev/null \
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
  suppressed="$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE message_id = '$id' AND status = 'suppressed'")"
  line="$(python3 - "$cpu0" "$cpu1" "$DEVICES" "$wal_bytes" "$(getconf CLK_TCK)" "$transport${category:++$category}${senders:+@$(basename "$(dirname "$(dirname "${senders%%\?*}")")")}${senders:+$([[ "$senders" == *\?* ]] && echo "?${senders#*\?}")}" "$rps" "$sent" "$t0" "$t1" "$suppressed" <<'PY'
import sys
a, b = [list(map(int, x.split())) for x in sys.argv[1:3]]
n, wal, hz, transport, rps, sent = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7]), int(sys.argv[8])
suppressed = int(sys.argv[11])
elapsed = float(sys.argv[10]) - float(sys.argv[9])
names = ["postgres", "apns-sender x2", "apns-sim", "redis", "gateway"]
per = [(y - x) / hz * 1e6 / n for x, y in zip(a, b)]
ours = sum(per[:5])
machine = per[5]
print("%-8s %6d deliveries/s (%d sent, %d suppressed); CPU per delivery (us): %s; stack %.0f, whole machine %.0f (others %.0f); WAL %.0f bytes"
      % (transport, rps, sent, suppressed, ", ".join("%s %.1f" % (name, v) for name, v in zip(names, per)), ours,
         machine, max(0.0, machine - ours), wal / n))
PY
)"
  echo "$line" >&2
  SUMMARY+=("$line")
  if [ -n "$samples" ]; then
    # Each first attempt's send time and each delivery's record time, per 100 ms from the POST.
    "${PSQL[@]}" -F' ' <<SQL | python3 "$BK_ROOT/bench/push_timeline.py" report "$samples" "$t0" "$t1" "$DEVICES" "$(getconf CLK_TCK)"
SELECT 'push', floor(((a ->> 't')::bigint / 1000.0 - $t0) * 10), count(*)
  FROM deliveries d CROSS JOIN LATERAL json_array_elements(d.attempts) a
  WHERE d.message_id = '$id' AND (a ->> 'n')::int = 1 GROUP BY 2;
SELECT 'row', floor((extract(epoch FROM created_at) - $t0) * 10), count(*) FROM deliveries WHERE message_id = '$id' GROUP BY 2;
SELECT 'first_push', min((a ->> 't')::bigint) / 1000.0 FROM deliveries d CROSS JOIN LATERAL json_array_elements(d.attempts) a
  WHERE d.message_id = '$id';
SELECT 'first_row', extract(epoch FROM min(created_at)) FROM deliveries WHERE message_id = '$id';
SELECT 'completed', extract(epoch FROM completed_at) FROM messages WHERE id = '$id' AND completed_at IS NOT NULL;
SELECT 'last_row_' || sending_by, extract(epoch FROM max(created_at)) FROM deliveries WHERE message_id = '$id' GROUP BY sending_by;
SQL
  fi
  "${PSQL[@]}" -F' ' >&2 <<SQL
SELECT 'attempts without an answer: ' || count(*) || ' ' || coalesce(a.error, '') FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
  WHERE d.message_id = '$id' AND a.status = 0 GROUP BY a.error;
SELECT 'APNs latency ms p50 / p90 / p99 / max: ' || array_to_string(percentile_disc(ARRAY[0.5, 0.9, 0.99, 1])
  WITHIN GROUP (ORDER BY a.latency_ms), ' / ') FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.message_id = '$id';
SQL
  # APNs requests this round (both replicas; they restart every round, so their counters start at 0).
  APNS_REQUESTS=0
  for port in "${SENDER_PORTS[@]}"; do
    n="$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^bk_apns_requests_total / {print int($2)}')"
    APNS_REQUESTS=$(( APNS_REQUESTS + ${n:-0} ))
  done
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
  stop_senders
  go_round
}

# go_round: issue 29's raw Go client right after a send, GO_PUSHES pushes against the same
# simulator (the machine's speed drifts by 10-20% over minutes here: a Go run at the end of the
# sitting was a poor yardstick for the first rounds). Appends "PUSHES/S CLIENT_US SIM_US" to GO_LINES.
GO_LINES=()
# As many pushes as the send has devices: a run of the same length has the same share of start
# and tail (200,000 before this sitting, against 100,000 deliveries, gave the Go client the longer
# run and the better rate).
# BK_PUSH_GO_PUSHES="100000 200000" runs it once per count after each round (the ratios read the first).
GO_COUNTS="${BK_PUSH_GO_PUSHES:-$DEVICES}"
GO_PUSHES="${GO_COUNTS%% *}"
go_round() {
  [ -z "${BK_PUSH_NO_GO:-}" ] || return 0
  local count line=""
  for count in $GO_COUNTS; do
    GO_PUSHES="$count" go_once
    [ -n "$line" ] || line="$GO_LAST"
  done
  GO_PUSHES="${GO_COUNTS%% *}"
  GO_LINES+=("$line")
}
go_once() {
  local before rps us accepted sim_us machine0 pg0
  bench_wait_quiet
  before="$(bench_ticks "$SIM_PID")"; machine0="$(bench_machine_ticks)"; pg0="$(bench_ticks $(bench_pg_pids "$WORK/pg/data"))"
  read -r rps us accepted < <(bench_go_apns_ceiling "$SIMPORT" "$WORK/provider.ec.pem" BENCHKEY01 BENCHTEAM1 "$GO_PUSHES")
  sim_us="$(awk -v a="$before" -v b="$(bench_ticks "$SIM_PID")" -v n="$GO_PUSHES" 'BEGIN { printf "%.1f", (b - a) * 1e6 / 100 / n }')"
  [ "$accepted" = "$GO_PUSHES" ] || bk_log "raw Go client: only $accepted of $GO_PUSHES accepted"
  echo "raw Go client just after, $GO_PUSHES pushes: $rps pushes/s; its own CPU $us us per push, the simulator's $sim_us; meanwhile the machine $(awk -v a="$machine0" -v b="$(bench_machine_ticks)" -v n="$GO_PUSHES" 'BEGIN { printf "%.1f", (b - a) * 1e4 / n }') us per push, Postgres $(awk -v a="$pg0" -v b="$(bench_ticks $(bench_pg_pids "$WORK/pg/data"))" -v n="$GO_PUSHES" 'BEGIN { printf "%.1f", (b - a) * 1e4 / n }')" >&2
  GO_LAST="$rps $us $sim_us"
}

if [ -n "${BK_PUSH_SENDERS:-}" ]; then
  # Only the senders differ between rounds (an A/B of apns-sender alone, in one sitting on one
  # database): "DIR_A DIR_B DIR_B DIR_A", each round on the first transport, labelled by its build
  # folder; "DIR?BUZZKIT_SENDER_CHUNK_SIZE=200&..." adds settings to that round's replicas.
  transport="${TRANSPORTS%% *}"
  for senders in $BK_PUSH_SENDERS; do send_round "$transport" "" "$senders"; done
else
  for transport in $TRANSPORTS; do send_round "$transport"; done
fi
if [ -n "${BK_PUSH_POLICY:-}" ]; then
  bk_log "policy rounds: seeding category 'news' (a third switched off), a cap of 3 a day, two earlier sends each"
  seed_policy
  send_round "$transport"
  REQUESTS_PLAIN="$APNS_REQUESTS"
  send_round "$transport" news
  REQUESTS_POLICY="$APNS_REQUESTS"
fi
grep 'connection closed' "$WORK/sim.out" | sort | uniq -c | sed 's/^/apns-sim: /' >&2 || true
kill "$GW_PID" 2>/dev/null || true; wait "$GW_PID" 2>/dev/null || true
# Every backend of the services has exited now, and a backend flushes its statistics when it exits.
for _ in $(seq 1 50); do
  [ "$("${PSQL[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")" = 0 ] && break
  sleep 0.1
done
"${PSQL[@]}" -F' ' >&2 <<SQL
SELECT 'table statistics (all rounds, after the services exited): ' || relname || ' inserts ' || n_tup_ins || ', updates ' || n_tup_upd || ' (HOT ' || n_tup_hot_upd || ')'
  FROM pg_stat_user_tables WHERE relname IN ('deliveries', 'delivery_chunks', 'delivery_payloads') ORDER BY relname;
SQL

bk_log "simulator ceiling: h2load, 4 connections x 100 streams, same simulator process ($(bench_load_note))"
read -r SIM_RPS H2LOAD_US < <(bench_h2load_ceiling "$SIMPORT" "$WORK/provider.ec.pem" BENCHKEY01 BENCHTEAM1)
echo "push fan-out, $DEVICES devices, 2 apns-sender replicas, POST to last ledger row:"
printf '  %s\n' "${SUMMARY[@]}"
echo "apns-sim ceiling (h2load 4x100, same process): $SIM_RPS requests/s; h2load's own CPU $H2LOAD_US us per request"
[ "${#GO_LINES[@]}" = 0 ] || printf '  raw Go client after round %s\n' "$(for i in "${!GO_LINES[@]}"; do
  read -r a b c <<<"${GO_LINES[$i]}"; echo "$((i + 1)): $a pushes/s, its CPU $b us, the simulator's $c us per push;"; done)"
python3 - "$SIM_RPS" "$H2LOAD_US" "$GO_PUSHES" "${#SUMMARY[@]}" "${SUMMARY[@]}" "${GO_LINES[@]}" <<'PY'
import re, sys
ceiling, h2load, go_pushes, rounds = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
summary, go = sys.argv[5:5 + rounds], sys.argv[5 + rounds:]
print("raw Go client (net/http HTTP/2 as apns2, 400 concurrent, no ledger, %d pushes, first request to last answer), "
      "run just after each round: rate and ratios per round below" % go_pushes if go else "raw Go client skipped")
for i, line in enumerate(summary):
    go_rps, go_us, go_sim_us = (float(x) for x in go[i].split()) if i < len(go) else (0.0, 0.0, 0.0)
    transport, rps = line.split()[0], float(line.split()[1])
    sender = float(re.search(r"apns-sender x2 ([\d.]+)", line).group(1))
    stack = float(re.search(r"stack ([\d.]+)", line).group(1))
    print("  %-8s %.1f%% of the simulator ceiling; senders %.1f us per delivery, %.2fx h2load's CPU per request (goal: <= 25, stack <= 70, >= 28000/s)"
          % (transport, 100.0 * rps / ceiling, sender, sender / h2load))
    if go_rps > 0:
        print("  %-8s against the raw Go client just after (%.0f pushes/s): rate %.2f of its (goal >= 1); senders %.2fx "
              "its CPU per push; stack %.2fx the Go client and the simulator per push (%.1f us)"
              % (transport, go_rps, rps / go_rps, sender / go_us, stack / (go_us + go_sim_us), go_us + go_sim_us))
PY
if [ -n "${BK_PUSH_POLICY:-}" ]; then
  python3 - "${SUMMARY[-2]}" "${SUMMARY[-1]}" "$REQUESTS_PLAIN" "$REQUESTS_POLICY" "$DEVICES" <<'PY'
import re, sys
plain, policy = sys.argv[1], sys.argv[2]
requests_plain, requests_policy, devices = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
stack = lambda line: float(re.search(r"stack (\d+)", line).group(1))
print("send policy: stack CPU per device %.0f us without a category, %.0f us in 'news' (a third suppressed): "
      "ratio %.2f (goal <= 1.10); APNs requests %d and %d (suppressed third: %d requests saved of %d devices)"
      % (stack(plain), stack(policy), stack(policy) / stack(plain), requests_plain, requests_policy,
         requests_plain - requests_policy, devices))
PY
fi
