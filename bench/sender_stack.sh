# The send path's benchmark stack, shared by bench/transactional.sh, bench/chaos_sender.sh,
# bench/sender_profile.sh and bench/workflows.sh.
# Sourced, never run (after deploy/lib/common.sh and bench/lib.sh). What `./deploy/local up` runs
# for the send path, from the same release binaries, on private ports in $WORK: PostgreSQL, Redis
# (AOF), the APNs simulator (recording every accepted push, so counts come from what "Apple" took),
# the gateway with rate limiting off and TWO apns-sender replicas (a and b).
#
# After stack_up: BIN, CLIENT (buzzkit-bench, the load client), PSQL (array), GW_URL, SIM_URL, SIM_CONTROL, SIM_PID, GW_PID, SENDER_PID[a|b],
# SENDER_PORT[a|b], BUZZKIT_TENANT, BUZZKIT_TENANT_KEY. PIDS lists what bench_stop_pids ends.
# Knobs: BK_SENDER_ENV (extra VAR=value words for both replicas), BK_PUSH_NO_BUILD=1 (reuse the
# binaries in .build-release-push), BK_BIN_DIR=DIR (run the release binaries in DIR instead, e.g.
# another checkout's, for a before/after comparison), BK_SENDER_WRAPPER (words a replica's command
# runs under, e.g. valgrind for bench/sender_profile.sh).

# -g: global even when sourced inside a function (bench/workflows.sh does), so stack_cleanup still
# finds the replicas to stop.
declare -gA SENDER_PID SENDER_PORT

stack_cleanup() {
  local r
  for r in "${!SENDER_PID[@]}"; do kill -9 "${SENDER_PID[$r]}" 2>/dev/null || true; done
  bench_stop_pids
  bk_stop_redis "$WORK/redis"
  bk_stop_postgres "$WORK/pg"
  rm -rf "$WORK"
}

# stack_start NAME: a work folder for the stack ($WORK, /tmp/bk-NAME.XXXXXX), everything it starts
# stopped and the folder removed when the script ends, then stack_up.
stack_start() {
  WORK="$(mktemp -d "/tmp/bk-$1.XXXXXX")"
  PIDS=()
  trap stack_cleanup EXIT
  trap 'exit 130' INT TERM
  stack_up
}

# stack_up: builds and starts everything (see above).
stack_up() {
  bk_log "building gateway, apns-sender, apns-sim, buzzkit-admin (release)"
  if [ -n "${BK_BIN_DIR:-}" ]; then
    BIN="$BK_BIN_DIR"
  elif [ -n "${BK_PUSH_NO_BUILD:-}" ]; then
    BIN="$(swift build -c release --show-bin-path --scratch-path .build-release-push)"
  else
    BIN="$(bench_release_build .build-release-push gateway apns-sender apns-sim buzzkit-admin)"
  fi
  # The load client (buzzkit-bench post-messages) is always this checkout's, so a before/after
  # comparison (BK_BIN_DIR) drives both stacks with the same client.
  if [ -n "${BK_PUSH_NO_BUILD:-}" ]; then
    CLIENT="$(swift build -c release --show-bin-path --scratch-path .build-release-push)/buzzkit-bench"
  else
    CLIENT="$(bench_release_build .build-release-push buzzkit-bench)/buzzkit-bench"
  fi
  local pgport redisport simctl
  pgport="$(bk_free_port)"; redisport="$(bk_free_port)"
  bench_bootstrap_stack "$pgport" "$redisport"

  "$BIN/apns-sim" --port 0 --control-port 0 --cert "$WORK/certs/cert.pem" --key "$WORK/certs/key.pem" \
    --key "BENCHKEY01=BENCHTEAM1:$WORK/provider.pub.pem" --threads 1 --record-limit 2000000 >"$WORK/sim.out" 2>&1 &
  SIM_PID=$!; PIDS+=("$SIM_PID")
  local i
  for i in $(seq 1 100); do grep -q 'listening on' "$WORK/sim.out" && break; sleep 0.1; done
  SIM_URL="https://127.0.0.1:$(sed -nE 's/.*listening on [^:]+:([0-9]+) control.*/\1/p' "$WORK/sim.out")"
  simctl="$(sed -nE 's/.*control [^:]+:([0-9]+).*/\1/p' "$WORK/sim.out")"
  [ -n "$simctl" ] || bk_die "apns-sim did not start: $(cat "$WORK/sim.out")"
  SIM_CONTROL="http://127.0.0.1:$simctl"

  local gwport
  gwport="$(bk_free_port)"
  BUZZKIT_HTTP_PORT="$gwport" BUZZKIT_RATE_LIMIT_ENABLED=false "$BIN/gateway" >"$WORK/gateway.log" 2>&1 &
  GW_PID=$!; PIDS+=("$GW_PID")
  GW_URL="http://127.0.0.1:$gwport"
  stack_start_replica a
  stack_start_replica b
  for i in $(seq 1 100); do curl -sf "$GW_URL/readyz" >/dev/null && break; sleep 0.1; done
  for r in a b; do
    for i in $(seq 1 100); do curl -sf "http://127.0.0.1:${SENDER_PORT[$r]}/readyz" >/dev/null && break; sleep 0.1; done
  done
}

# stack_start_replica a|b: starts (or restarts) that apns-sender replica, appending to its log.
stack_start_replica() {
  local r="$1" port
  port="${SENDER_PORT[$r]:-$(bk_free_port)}"
  SENDER_PORT[$r]="$port"
  # shellcheck disable=SC2086
  env BUZZKIT_HTTP_PORT="$port" BUZZKIT_INSTANCE_ID="bench-sender-$r" \
    BUZZKIT_APNS_SANDBOX_URL="$SIM_URL" BUZZKIT_APNS_CA_FILE="$WORK/certs/ca.pem" BUZZKIT_DB_POOL_SIZE=8 \
    ${BK_SENDER_ENV:-} ${BK_SENDER_WRAPPER:-} "$BIN/apns-sender" >>"$WORK/sender-$r.log" 2>&1 &
  SENDER_PID[$r]=$!
}

# stack_restart_replicas TRANSPORT: stops both replicas (SIGTERM, waited) and starts them again with
# BUZZKIT_APNS_TRANSPORT=TRANSPORT, waiting until both are ready. Only builds from between issue
# 29's nghttp2 client and the libcurl client's removal read it ("curl" ran the former client);
# others ignore it.
stack_restart_replicas() {
  local transport="$1" r i
  for r in a b; do [ -n "${SENDER_PID[$r]:-}" ] && kill "${SENDER_PID[$r]}" 2>/dev/null || true; done
  for r in a b; do [ -n "${SENDER_PID[$r]:-}" ] && wait "${SENDER_PID[$r]}" 2>/dev/null || true; done
  local saved="${BK_SENDER_ENV:-}"
  BK_SENDER_ENV="$saved BUZZKIT_APNS_TRANSPORT=$transport"
  stack_start_replica a
  stack_start_replica b
  BK_SENDER_ENV="$saved"
  for r in a b; do
    for i in $(seq 1 200); do curl -sf "http://127.0.0.1:${SENDER_PORT[$r]}/readyz" >/dev/null && break; sleep 0.1; done
  done
}

# stack_sender_cpu: CPU ticks so far of both replicas (their current processes).
stack_sender_cpu() { bench_ticks "${SENDER_PID[a]}" "${SENDER_PID[b]}"; }

# stack_devices PREFIX N [TOPIC]: N subscribers PREFIX0000001…, each with one sandbox device whose
# token is sha256(PREFIX || n) in hex; with TOPIC, all of them subscribed to it.
stack_devices() {
  local prefix="$1" n="$2" topic="${3:-}"
  "${PSQL[@]}" <<SQL
INSERT INTO subscribers (tenant_id, id) SELECT '$BUZZKIT_TENANT', '$prefix' || lpad(n::text, 7, '0') FROM generate_series(1, $n) n;
INSERT INTO devices (tenant_id, token, subscriber_id, environment)
  SELECT '$BUZZKIT_TENANT', encode(sha256(('$prefix' || n)::bytea), 'hex'), '$prefix' || lpad(n::text, 7, '0'), 'sandbox'
  FROM generate_series(1, $n) n;
SQL
  if [ -n "$topic" ]; then
    "${PSQL[@]}" <<SQL
INSERT INTO topics (tenant_id, key) VALUES ('$BUZZKIT_TENANT', '$topic');
INSERT INTO topic_subscriptions (tenant_id, topic_key, subscriber_id)
  SELECT '$BUZZKIT_TENANT', '$topic', '$prefix' || lpad(n::text, 7, '0') FROM generate_series(1, $n) n;
SQL
  fi
  "${PSQL[@]}" -c "ANALYZE"
}

# stack_post BODY: POSTs one message, prints its id.
stack_post() {
  local reply
  reply="$(curl -sf -X POST "$GW_URL/v1/messages" -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" \
    -H 'Content-Type: application/json' -d "$1")" || bk_die "POST /v1/messages failed"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["id"])' "$reply"
}

# stack_sim_accepted: pushes the simulator has accepted since it started (or its last reset).
# stack_cpu: CPU ticks so far of postgres (all backends), both senders, the simulator, redis and the
# gateway; stack_cpu_report BEFORE AFTER N LABEL prints each one's microseconds per unit of N.
stack_cpu() {
  echo "$(bench_ticks $(bench_pg_pids "$WORK/pg/data")) $(bench_ticks "${SENDER_PID[a]}" "${SENDER_PID[b]}") $(bench_ticks "$SIM_PID") $(bench_ticks "$(cat "$WORK/redis/redis.pid")") $(bench_ticks "$GW_PID")"
}
stack_cpu_report() {
  python3 - "$1" "$2" "$3" "$4" "$(getconf CLK_TCK)" <<'PY'
import sys
a, b = [list(map(int, x.split())) for x in sys.argv[1:3]]
n, label, hz = int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
names = ["postgres", "apns-sender x2", "apns-sim", "redis", "gateway"]
parts = ["%s %.0f" % (name, (y - x) / hz * 1e6 / n) for name, x, y in zip(names, a, b)]
print("CPU per %s (us): %s; total %.0f" % (label, ", ".join(parts), sum(y - x for x, y in zip(a, b)) / hz * 1e6 / n))
PY
}

stack_sim_accepted() {
  curl -sf "$SIM_CONTROL/control/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["accepted"])'
}

# stack_wait_done WHERE EXPECTED TIMEOUT [ACCEPTED_BEFORE]: waits until EXPECTED deliveries
# matching the SQL condition WHERE are past queued/sending. It polls the simulator's accepted
# count (costs Postgres nothing) and counts in the tables once the simulator has taken EXPECTED
# more than ACCEPTED_BEFORE, or every 2 s (rejections and failures never reach that count).
stack_wait_done() {
  local where="$1" expected="$2" deadline=$(( $(date +%s) + $3 )) before="${4:-0}" done=0 accepted tick=0
  while :; do
    accepted="$(stack_sim_accepted)"
    tick=$(( tick + 1 ))
    if [ $(( ${accepted:-0} - before )) -ge "$expected" ] || [ $(( tick % 10 )) -eq 0 ]; then
      done="$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE $where AND status NOT IN ('queued', 'sending')")"
      [ "$done" -ge "$expected" ] && return 0
    fi
    [ "$(date +%s)" -lt "$deadline" ] || bk_die "timed out: $done of $expected deliveries ended (simulator accepted $accepted)"
    sleep 0.2
  done
}
