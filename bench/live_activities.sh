#!/usr/bin/env bash
# Live Activity sends end to end: 10,000 registered activities (bulk-inserted in SQL), the gateway,
# one liveactivity replica, the APNs simulator (recording, so it says when each push arrived), all
# release builds on loopback. Three measurements in one run:
#   1. latency: POST /v1/live-activities/send at a fixed 500 updates/s, each to another activity
#      (open loop, 20 s): p50 / p99 from the POST to the push reaching the simulator (its
#      receivedAt, in ms) and to the answer with the per-token result, and the CPU each process
#      spent per update; once per entry of BK_APNS_TRANSPORTS (default "nghttp2": the round
#      labels; an older build given with BK_LA_BIN that still has the libcurl client runs it with
#      "curl"; the replica restarted);
#   2. the most updates/s with per-token answers the stack sustains (closed loop, 32 connections,
#      10 s, every answer checked for result `sent`);
#   3. the baseline of the same run: one message to a topic of 100,000 devices through two
#      apns-sender replicas (deliveries/s from the POST to the last ledger row, as
#      bench/push_fanout.sh measures it), and the ratio of (2) to it;
# then the simulator's ceiling (h2load, and its own CPU per request). 2 and 3 use the last transport.
# Usage: bench/live_activities.sh [activities, default 10000] [topic devices, default 100000].
# Knobs: BK_LA_RATE (500), BK_LA_SECONDS (20), BK_LA_CONNECTIONS (32), BK_LA_HISTORY (100000
# earlier sends in the ledger), BK_LA_NO_BUILD=1 reuses the binaries in .build-release-la,
# BK_LA_BIN=DIR runs the binaries in DIR (another build, for a before/after in one sitting),
# BK_LA_QUICK=1 stops after measurement 1. BK_LA_PROFILE=1 adds where the time of measurement 1
# went: each update's stages from the ledger's timestamps, the CPU each process spent per
# update, and the statements Postgres ran per update (pg_stat_statements); BK_LA_PERF=DIR
# records 6 s of `perf record -a -g` into DIR during it. BK_LA_FLOOR=1 measures the floor by parts
# instead, each with a client we did not write, at BK_LA_RATE for BK_LA_SECONDS, and stops:
# Postgres (pgbench, one client: two `SELECT 1`, one and two one-row durable INSERTs per "update",
# then the Live Activity path's own two statements as the replica ran them, their text and
# parameters taken from Postgres's statement log, backend CPU per update); the gateway (h2load
# over HTTP/1.1, one connection, one request at a time: `/healthz`, and `GET /v1/key`
# authenticated); Redis (redis-py from PyPI in a throwaway venv: the path's XADD, XREADGROUP,
# LPUSH + EXPIRE + XACK pipelined, BLMPOP per update); the simulator (h2load over TLS, HTTP/2, an
# ES256 token and a Live Activity payload per push). Stops everything it starts.
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

ACTIVITIES="${1:-10000}"
DEVICES="${2:-100000}"
RATE="${BK_LA_RATE:-500}"
SECONDS_AT_RATE="${BK_LA_SECONDS:-20}"
CONNECTIONS="${BK_LA_CONNECTIONS:-32}"
WORK="$(mktemp -d /tmp/bk-la-bench.XXXXXX)"
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

bk_log "building gateway, liveactivity, apns-sender, apns-sim, buzzkit-admin (release)"
if [ -n "${BK_LA_BIN:-}" ]; then
  BIN="$(cd "$BK_LA_BIN" && pwd)"
elif [ -n "${BK_LA_NO_BUILD:-}" ]; then
  BIN="$(swift build -c release --show-bin-path --scratch-path .build-release-la)"
else
  BIN="$(bench_release_build .build-release-la gateway liveactivity apns-sender apns-sim buzzkit-admin)"
fi

[ -n "${BK_LA_PROFILE:-}" ] && export BK_PG_OPTIONS="${BK_PG_OPTIONS:-} -c shared_preload_libraries=pg_stat_statements"
bench_bootstrap_stack "$PGPORT" "$REDISPORT"
[ -n "${BK_LA_PROFILE:-}" ] && "${PSQL[@]}" -c "CREATE EXTENSION pg_stat_statements"

# BK_LA_FLOOR: what two durable commits cost Postgres at this rate, requests one by one. pgbench's
# backend exits with it, so its CPU is read from what the postmaster reaped (cutime + cstime).
FLOOR_LINES=()
if [ -n "${BK_LA_FLOOR:-}" ]; then
  "${PSQL[@]}" -c "CREATE TABLE la_floor (id bigserial PRIMARY KEY, a uuid, b text, c jsonb)"
  insert="INSERT INTO la_floor (a, b, c) VALUES (gen_random_uuid(), 'x', '{\"n\": 1}');"
  printf 'SELECT 1;\nSELECT 1;\n' >"$WORK/floor-select.sql"
  printf '%s\n' "$insert" >"$WORK/floor-one.sql"
  printf '%s\n%s\n' "$insert" "$insert" >"$WORK/floor-two.sql"
  reaped() { awk '{print $16 + $17}' "/proc/$(head -1 "$WORK/pg/data/postmaster.pid")/stat"; }
  for f in select one two; do
    c0="$(reaped)"
    pgbench -h 127.0.0.1 -p "$PGPORT" -U buzzkit -n -M prepared -c 1 -R "$RATE" -T "$SECONDS_AT_RATE" \
      -f "$WORK/floor-$f.sql" buzzkit >"$WORK/floor-$f.out" 2>&1
    sleep 0.5
    c1="$(reaped)"
    n="$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' "$WORK/floor-$f.out")"
    FLOOR_LINES+=("postgres, pgbench $f: $n updates at $RATE/s, backend CPU per update $(python3 -c "print(round(($c1 - $c0) / $(getconf CLK_TCK) * 1e6 / $n))") us")
    echo "${FLOOR_LINES[-1]}" >&2
  done
fi

bk_log "inserting $ACTIVITIES activities, ${BK_LA_HISTORY:-100000} earlier sends and a topic of $DEVICES devices"
"${PSQL[@]}" <<SQL
INSERT INTO subscribers (tenant_id, id) SELECT '$BUZZKIT_TENANT', 'la' || lpad(n::text, 6, '0') FROM generate_series(1, $ACTIVITIES) n;
INSERT INTO live_activities (tenant_id, activity_id, subscriber_id, attributes_type, token, environment, bundle_id)
  SELECT '$BUZZKIT_TENANT', 'act' || n, 'la' || lpad(n::text, 6, '0'), 'MatchAttributes',
         encode(sha256(('la' || n)::bytea), 'hex'), 'sandbox', 'com.example.bench' FROM generate_series(1, $ACTIVITIES) n;
SQL
# A ledger with history, as a running system has: BK_LA_HISTORY (100,000) earlier Live Activity
# sends (message, delivery, attempt each). On an empty ledger the statements prepared in the
# first seconds keep plans made for empty tables (sequential scans of messages and deliveries,
# each slower as the run fills them) until autovacuum's first ANALYZE, up to a minute later.
# Attempt rows are delivery_attempt_rows since migration 0016 (delivery_attempts is a view over them
# and the deliveries' own arrays); older builds (BK_LA_BIN) have the table itself. The history is
# written there; the run's own attempts are read through `delivery_attempts`, which shows both
# (since migration 0018 a Live Activity send's attempts are inline, as a push's).
ATTEMPT_ROWS="$("${PSQL[@]}" -c "SELECT coalesce(to_regclass('delivery_attempt_rows')::text, 'delivery_attempts')")"
# Since migration 0027 the ledger's rows carry their message's week (message_time); older builds
# have no such column.
if [ "$("${PSQL[@]}" -c "SELECT count(*) FROM information_schema.columns WHERE table_name = 'messages' AND column_name = 'message_time'")" = 1 ]; then
  MT_COL="message_time, " MT_VAL="'$(date -u -d '1 day ago' '+%Y-%m-%d %H:%M:%S+00')', "
else
  MT_COL="" MT_VAL=""
fi
"${PSQL[@]}" <<SQL
INSERT INTO messages (id, ${MT_COL}tenant_id, target, content, status, kind, audience_size, created_at, updated_at)
  SELECT md5('m' || n)::uuid, ${MT_VAL}'$BUZZKIT_TENANT', jsonb_build_object('to', jsonb_build_array('la' || lpad((n % $ACTIVITIES + 1)::text, 6, '0'))),
         '{"liveActivity": {"event": "update"}}', 'fanned_out', 'live_activity', 1, now() - interval '1 day', now() - interval '1 day'
  FROM generate_series(1, ${BK_LA_HISTORY:-100000}) n;
INSERT INTO deliveries (id, tenant_id, message_id, ${MT_COL}device_token, subscriber_id, environment, status, attempt_count,
                        apns_id, last_status, sent_at, created_at, updated_at)
  SELECT md5('d' || n)::uuid, '$BUZZKIT_TENANT', md5('m' || n)::uuid, ${MT_VAL} encode(sha256(('la' || (n % $ACTIVITIES + 1))::bytea), 'hex'),
         'la' || lpad((n % $ACTIVITIES + 1)::text, 6, '0'), 'sandbox', 'sent', 1, md5('a' || n)::uuid, 200,
         now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'
  FROM generate_series(1, ${BK_LA_HISTORY:-100000}) n;
INSERT INTO $ATTEMPT_ROWS (delivery_id, attempt, payload, headers, status, apns_id, latency_ms, at)
  SELECT md5('d' || n)::uuid, 1, '{"aps":{"event":"update","timestamp":1,"content-state":{}}}', '{"apns-push-type":"liveactivity"}',
         200, md5('a' || n)::uuid::text, 1, now() - interval '1 day'
  FROM generate_series(1, ${BK_LA_HISTORY:-100000}) n;
ANALYZE;
SQL
[ -n "${BK_LA_QUICK:-}" ] || bench_seed_topic "$DEVICES"
# The seeding's aftermath (autovacuum of the new rows, a checkpoint of their WAL) done now, not
# during the measurements.
"${PSQL[@]}" -c "VACUUM (ANALYZE)" -c "CHECKPOINT"

bk_log "starting apns-sim (recording, 1 thread), gateway, liveactivity"
"$BIN/apns-sim" --port 0 --control-port 0 --cert "$WORK/certs/cert.pem" --key "$WORK/certs/key.pem" \
  --key "BENCHKEY01=BENCHTEAM1:$WORK/provider.pub.pem" --threads 1 >"$WORK/sim.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q 'listening on' "$WORK/sim.out" && break; sleep 0.1; done
SIMPORT="$(sed -nE 's/.*listening on [^:]+:([0-9]+) control.*/\1/p' "$WORK/sim.out")"
CONTROLPORT="$(sed -nE 's/.*control [^:]+:([0-9]+).*/\1/p' "$WORK/sim.out")"
[ -n "$SIMPORT" ] || bk_die "apns-sim did not start: $(cat "$WORK/sim.out")"
export BUZZKIT_APNS_SANDBOX_URL="https://127.0.0.1:$SIMPORT" BUZZKIT_APNS_CA_FILE="$WORK/certs/ca.pem"

GWPORT="$(bk_free_port)"
BUZZKIT_HTTP_PORT="$GWPORT" BUZZKIT_RATE_LIMIT_ENABLED=false BUZZKIT_DB_POOL_SIZE=8 "$BIN/gateway" >"$WORK/gateway.log" 2>&1 &
PIDS+=($!)
LAPORT="$(bk_free_port)"
PIDS+=(0)  # PIDS[2]: the liveactivity replica, (re)started per transport by start_la
# start_la TRANSPORT: (re)starts the liveactivity replica with that APNs transport.
start_la() {
  if [ "${PIDS[2]}" != 0 ]; then kill "${PIDS[2]}" 2>/dev/null || true; wait "${PIDS[2]}" 2>/dev/null || true; fi
  BUZZKIT_HTTP_PORT="$LAPORT" BUZZKIT_INSTANCE_ID=bench-la BUZZKIT_DB_POOL_SIZE=16 BUZZKIT_APNS_TRANSPORT="$1" \
    "$BIN/liveactivity" >>"$WORK/la.log" 2>&1 &
  PIDS[2]=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$LAPORT/readyz" >/dev/null && break; sleep 0.1; done
  sleep 1
}
# la_floor_parts (BK_LA_FLOOR): the floor of each part of an update at $RATE/s, measured with
# clients we did not write, on this run's stack; appends a line per part to FLOOR_LINES.
la_floor_parts() {
  local hz n t0 t1 c0 c1 jwt token proc
  hz="$(getconf CLK_TCK)"
  # Postgres: the path's two statements as the replica ran them. Three updates with the statement
  # log on; the last one's text and parameters become a pgbench script (la_pgbench.py) that sends
  # update :n to a fresh message, its ids and times made anew in one SELECT before them (measured
  # alone and taken off).
  "${PSQL[@]}" -c "ALTER SYSTEM SET log_min_duration_statement = 0" -c "SELECT pg_reload_conf()" >/dev/null
  local logstart
  logstart="$(($(wc -c <"$WORK/pg/postgres.log") + 1))"
  for n in 1 2 3; do
    curl -sf -o /dev/null -X POST "http://127.0.0.1:$GWPORT/v1/live-activities/send" -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" \
      -d "{\"to\":\"la$(printf %06d $n)\",\"event\":\"update\",\"activityId\":\"act$n\",\"contentState\":{\"n\":$n}}"
  done
  "${PSQL[@]}" -c "ALTER SYSTEM RESET log_min_duration_statement" -c "SELECT pg_reload_conf()" >/dev/null
  tail -c "+$logstart" "$WORK/pg/postgres.log" >"$WORK/statements.log"
  "${PSQL[@]}" -F ' ' -c "SELECT m.id, d.id, d.payload_id FROM messages m JOIN deliveries d ON d.message_id = m.id
    WHERE m.kind = 'live_activity' AND m.content->'liveActivity'->'contentState'->>'n' = '3'" >"$WORK/statement-ids.txt"
  "${PSQL[@]}" <<'SQL'
CREATE FUNCTION la_bench_uuid7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT (lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
          || '7' || substr(md5(random()::text), 1, 3) || '8' || substr(md5(random()::text), 1, 15))::uuid
$$;
SQL
  cat >"$WORK/la_pgbench.py" <<'PY'
# Builds a pgbench script of the Live Activity path's two statements, as the liveactivity replica
# ran them (their text and parameters from Postgres's statement log), for one update per
# transaction to activity :n: the logged message id, activity, subscriber, token, delivery,
# request and chunk ids and times replaced by fresh ones. Usage: la_pgbench.py LOG IDS OUT
# (IDS: "message delivery payload" of the logged update, from the ledger).
import re, sys
log, ids, out = sys.argv[1], open(sys.argv[2]).read().split(), sys.argv[3]
old_mid, old_did, old_pid = ids
lines = open(log).read().split("\n")
def grab(prefix):
    found = None
    for i, l in enumerate(lines):
        m = re.search(r"LOG:  (?:duration: [0-9.]+ ms  )?execute [^:]*: (.*)$", l)
        if m and m.group(1).startswith(prefix):
            text = [m.group(1)]; j = i + 1
            while not lines[j].split("UTC [")[-1].split("] ", 1)[-1].startswith("DETAIL:  parameters:"):
                text.append(lines[j][1:] if lines[j].startswith("\t") else lines[j]); j += 1
            params = dict(re.findall(r"\$(\d+) = (NULL|'(?:[^']|'')*')", lines[j].split("parameters: ", 1)[1]))
            if old_mid in lines[j]: found = ("\n".join(text), params)
    if not found: sys.exit("no logged statement starting " + prefix)
    return found
decide, dparams = grab("WITH request AS MATERIALIZED")
record, rparams = grab("WITH times AS MATERIALIZED")
# The logged update's activity, subscriber, token and timestamp.
act = re.search(r"\{(act\d+)\}", dparams["4"] + dparams["6"]).group(1)
sub = re.search(r"\{(la\d+)\}", dparams["5"]).group(1)
ts = re.search(r"\{(\d+)\}", dparams["8"]).group(1)
token = re.search(r"\{\"?([0-9a-f]{64})\"?\}", " ".join(rparams.values())).group(1)
tenant = re.search(r"\{([0-9a-f-]{36})\}", dparams["3"]).group(1)
uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
known = {old_mid, old_did, old_pid, tenant}
chunks = {u for v in rparams.values() for u in re.findall(uuid, v)} - known
assert len(chunks) == 1, chunks
old_chunk = chunks.pop()
stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\+00"
def fresh(value, name):
    # SQL for this transaction's value of a logged parameter.
    if value == "NULL": return "NULL::text AS %s" % name
    expr = re.sub(stamp, "\x00", value)  # every time: the new message's
    parts = expr.split("\x00")
    expr = "' || mt || '".join(parts)
    for old, new in ((old_mid, "u::text"), (old_did, "bk_delivery_id(u, tok)::text"), (old_pid, "pid"),
                     (token, "tok"), (sub, "sub"), (act, "act"), (ts, "ts")):
        expr = expr.replace(old, "' || " + new + " || '")
    return "%s AS %s" % (expr, name)
pre_cols = ["%s" % fresh(v, "d%s" % k) for k, v in dparams.items()] + \
           ["%s" % fresh(v, "r%s" % k) for k, v in rparams.items()]
pre = """\\set n random(1, %(activities)s)
SELECT %(cols)s
FROM (SELECT u, gen_random_uuid()::text AS pid, 'la' || lpad(:n::text, 6, '0') AS sub, 'act' || :n AS act,
             encode(sha256(('la' || :n)::bytea), 'hex') AS tok, extract(epoch FROM now())::bigint::text AS ts,
             to_timestamp(('x' || substr(u::text, 1, 8) || substr(u::text, 10, 4))::bit(48)::bigint / 1000.0)::text AS mt
      FROM la_bench_uuid7() u) x \\gset
""" % {"activities": "ACTIVITIES", "cols": ",\n       ".join(pre_cols)}
def subst(text, prefix, params):
    def one(m):
        k = m.group(1)
        if k not in params: return m.group(0)
        v = ":%s%s" % (prefix, k)
        return "replace(%s, '%s', :c6)" % (v, old_chunk) if old_chunk in params[k] else v
    return re.sub(r"\$(\d+)(?!\d)", one, text)
# The deciding statement's columns named, for \gset (c6: the chunk).
decide = re.sub(r"SELECT r\.i, '(\w+)', NULL, NULL, NULL, NULL::uuid(, NULL::timestamptz)? FROM replayed r",
                lambda m: "SELECT r.i AS c1, '%s' AS c2, NULL AS c3, NULL AS c4, NULL AS c5, NULL::uuid AS c6%s FROM replayed r"
                % (m.group(1), ", NULL::timestamptz AS c7" if m.group(2) else ""), decide)
assert "AS c6" in decide
open(out, "w").write(pre + subst(decide, "d", dparams) + "\n\\gset\n" + subst(record, "r", rparams) + ";\n")
open(out + ".pre", "w").write(pre)
PY
  python3 "$WORK/la_pgbench.py" "$WORK/statements.log" "$WORK/statement-ids.txt" "$WORK/la.pgb" || bk_die "no pgbench script"
  sed -i "s/ACTIVITIES/$ACTIVITIES/" "$WORK/la.pgb" "$WORK/la.pgb.pre"
  reaped() { awk '{print $16 + $17}' "/proc/$(head -1 "$WORK/pg/data/postmaster.pid")/stat"; }
  local pre=0 script
  for script in la.pgb.pre la.pgb; do
    c0="$(reaped)"
    pgbench -h 127.0.0.1 -p "$PGPORT" -U buzzkit -n -M prepared -c 1 -R "$RATE" -T "$SECONDS_AT_RATE" \
      -f "$WORK/$script" buzzkit >"$WORK/$script.out" 2>&1
    sleep 1
    c1="$(reaped)"
    n="$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' "$WORK/$script.out")"
    grep -q "number of failed transactions: 0 " "$WORK/$script.out" || bk_die "pgbench $script: $(tail -3 "$WORK/$script.out")"
    if [ "$script" = la.pgb.pre ]; then
      pre="$(python3 -c "print(($c1 - $c0) / $hz * 1e6 / $n)")"
    else
      FLOOR_LINES+=("postgres, pgbench the path's two statements: $n updates at $RATE/s, backend CPU per update $(python3 -c "print(round(($c1 - $c0) / $hz * 1e6 / $n - $pre))") us (the SELECT making each one's ids, $(python3 -c "print(round($pre))") us, taken off)")
      echo "${FLOOR_LINES[-1]}" >&2
    fi
  done
  # The gateway: one HTTP/1.1 connection, a request every 1/RATE s (h2load's timing script).
  ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
  local total=$((${RATE%.*} * ${SECONDS_AT_RATE%.*}))
  local path label
  for path in /healthz /v1/key; do
    python3 -c "import sys; [print('%d\t%s' % (i * 1000 // $RATE, sys.argv[1])) for i in range($total)]" \
      "http://127.0.0.1:$GWPORT$path" >"$WORK/timing.txt"
    t0="$(ticks "${PIDS[1]}")"
    h2load --h1 -c 1 -m 1 -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" --timing-script-file="$WORK/timing.txt" \
      >"$WORK/h2load-gateway.out" 2>&1
    t1="$(ticks "${PIDS[1]}")"
    label="$(sed -nE 's/^finished in ([0-9.]+s), ([0-9.]+) req\/s.*/\2/p' "$WORK/h2load-gateway.out")"
    grep -q "$total 2xx" "$WORK/h2load-gateway.out" || bk_die "h2load $path: $(grep 'status codes' "$WORK/h2load-gateway.out")"
    FLOOR_LINES+=("gateway, h2load GET $path: $total requests at $label/s, gateway CPU per request $(python3 -c "print(round(($t1 - $t0) / $hz * 1e6 / $total))") us")
    echo "${FLOOR_LINES[-1]}" >&2
  done
  # Redis: the path's commands for each update, from redis-py (PyPI) in a throwaway venv.
  python3 -m venv "$WORK/venv" >/dev/null && "$WORK/venv/bin/pip" install -q --disable-pip-version-check redis >/dev/null \
    || bk_die "pip install redis failed"
  cat >"$WORK/redis_path.py" <<'PY'
# The Live Activity path's Redis commands per update, at a fixed rate, with redis-py (not ours):
# the gateway's XADD, the lane's XREADGROUP, its answer (LPUSH, EXPIRE) with the XACK in one
# pipeline, the gateway reader's BLMPOP: four round trips, five commands.
import sys, time, redis
port, rate, seconds = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
gw = redis.Redis(port=port); lane = redis.Redis(port=port); reader = redis.Redis(port=port)
stream, group = "bk:la-floor", "floor"
try:
    gw.xgroup_create(stream, group, id="$", mkstream=True)
except redis.ResponseError:
    pass
body = b'{"tenantId":"00000000-0000-0000-0000-000000000000","messageId":"01a24a23-74e6-70a8-90f4-8837ccd94a6d","replyKey":"bk:la:replies:gw1","request":{"to":"la000077","event":"update","activityId":"act77","contentState":{"n":77},"timestamp":1796540167}}'
answer = b'{"id":"x","reply":{"results":[{"activityId":"act77","status":"sent","apnsStatus":200}]}}' * 2
n = int(rate * seconds); t0 = time.monotonic()
for i in range(n):
    delay = t0 + i / rate - time.monotonic()
    if delay > 0: time.sleep(delay)
    gw.xadd(stream, {"e": body})
    entries = lane.xreadgroup(group, "lane1", {stream: ">"}, count=64, block=1000)
    ids = [e[0] for _, es in entries for e in es]
    p = lane.pipeline(transaction=False)
    p.lpush("bk:la:replies:gw1", answer); p.expire("bk:la:replies:gw1", 30); p.xack(stream, group, *ids)
    p.execute()
    reader.blmpop(1, 1, "bk:la:replies:gw1", direction="RIGHT", count=64)
print(n)
PY
  t0="$(ticks "$(cat "$WORK/redis/redis.pid")")"
  n="$("$WORK/venv/bin/python" "$WORK/redis_path.py" "$REDISPORT" "$RATE" "$SECONDS_AT_RATE")"
  t1="$(ticks "$(cat "$WORK/redis/redis.pid")")"
  FLOOR_LINES+=("redis, redis-py XADD, XREADGROUP, LPUSH + EXPIRE + XACK, BLMPOP: $n updates at $RATE/s, Redis CPU per update $(python3 -c "print(round(($t1 - $t0) / $hz * 1e6 / $n))") us")
  echo "${FLOOR_LINES[-1]}" >&2
  # The simulator: one HTTP/2 connection over TLS, a push every 1/RATE s, each with its token.
  jwt="$(bench_apns_jwt "$WORK/provider.ec.pem" BENCHKEY01 BENCHTEAM1)"
  token="$(openssl rand -hex 32)"
  printf '{"aps":{"content-state":{"n":77},"event":"update","timestamp":1796540167}}' >"$WORK/la-payload.json"
  python3 -c "import sys; [print('%d\t%s' % (i * 1000 // $RATE, sys.argv[1])) for i in range($total)]" \
    "https://127.0.0.1:$SIMPORT/3/device/$token" >"$WORK/timing.txt"
  t0="$(ticks "${PIDS[0]}")"
  h2load -c 1 -m 1 -H "authorization: bearer $jwt" -H "apns-topic: com.example.bench.push-type.liveactivity" \
    -H "apns-push-type: liveactivity" -H "apns-priority: 10" -d "$WORK/la-payload.json" \
    --timing-script-file="$WORK/timing.txt" >"$WORK/h2load-sim.out" 2>&1
  t1="$(ticks "${PIDS[0]}")"
  grep -q "$total 2xx" "$WORK/h2load-sim.out" || bk_die "h2load simulator: $(grep 'status codes' "$WORK/h2load-sim.out")"
  label="$(sed -nE 's/^finished in ([0-9.]+s), ([0-9.]+) req\/s.*/\2/p' "$WORK/h2load-sim.out")"
  FLOOR_LINES+=("apns-sim, h2load POST over TLS (HTTP/2): $total pushes at $label/s, simulator CPU per push $(python3 -c "print(round(($t1 - $t0) / $hz * 1e6 / $total))") us")
  echo "${FLOOR_LINES[-1]}" >&2
}

for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$GWPORT/readyz" >/dev/null && break; sleep 0.1; done

if [ -n "${BK_LA_FLOOR:-}" ]; then
  start_la nghttp2
  la_floor_parts
  printf '%s\n' "${FLOOR_LINES[@]}"
  exit 0
fi

# The load generator: HTTP/1.1 keep-alive connections in one asyncio loop. `rate` mode sends
# request i at t0 + i/rate (each to activity i mod N); `closed` mode keeps every connection busy.
cat >"$WORK/load.py" <<'PY'
import asyncio, json, resource, sys, time
mode, port, key, activities, rate, seconds, connections, out = sys.argv[1:9]
activities, rate, seconds, connections = int(activities), float(rate), float(seconds), int(connections)

async def connect():
    return await asyncio.open_connection("127.0.0.1", int(port))

async def post(conn, n):
    reader, writer = conn
    body = json.dumps({"to": "la%06d" % (n % activities + 1), "event": "update", "activityId": "act%d" % (n % activities + 1),
                       "contentState": {"n": n}}).encode()
    head = ("POST /v1/live-activities/send HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (key, len(body))).encode()
    writer.write(head + body)
    status_line = await reader.readline()
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    data = await reader.readexactly(length)
    try:
        return status_line.split()[1] == b"200" and json.loads(data)["data"]["results"][0]["status"] == "sent"
    except (IndexError, KeyError, TypeError, ValueError):
        return False

async def main():
    conns = [await connect() for _ in range(connections)]
    results = []  # (n, wall time the POST was written, seconds to the answer, ok)
    t0 = time.monotonic()
    total = int(rate * seconds) if mode == "rate" else None
    counter = iter(range(10 ** 9))
    async def worker(conn):
        while True:
            n = next(counter)
            if mode == "rate":
                if n >= total:
                    return
                delay = t0 + n / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            elif time.monotonic() - t0 >= seconds:
                return
            wall, start = time.time(), time.monotonic()
            ok = await post(conn, n)
            results.append((n, wall, time.monotonic() - start, ok))
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.monotonic() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as f:
        json.dump({"elapsed": elapsed, "results": results, "cpu": usage.ru_utime + usage.ru_stime}, f)

asyncio.run(main())
PY

# CPU ticks of postgres (postmaster and children), the gateway, the liveactivity replica, the
# simulator, redis, and of the whole machine (the load generator reports its own).
# Postgres is split into the backends serving the services' connections and the rest (the
# postmaster and its background workers: checkpointer, WAL writer, autovacuum).
cpu_snapshot() {
  local pg backends=() others=() p
  for p in $(bench_pg_pids "$WORK/pg/data"); do
    if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '127\.0\.0\.1('; then backends+=("$p"); else others+=("$p"); fi
  done
  echo "$(bench_ticks "${backends[@]}") $(bench_ticks "${others[@]}") $(bench_ticks "${PIDS[1]}")" \
    "$(bench_ticks "${PIDS[2]}") $(bench_ticks "${PIDS[0]}") $(bench_ticks "$(cat "$WORK/redis/redis.pid")")" \
    "$(bench_machine_ticks)"
}

# cpu_per_update RUN.json CPU0 CPU1: the CPU each process spent per answered update between the
# two snapshots (cpu_snapshot), the load generator's own, and how busy the whole machine was.
cpu_per_update() {
  python3 - "$1" "$2" "$3" "$(getconf CLK_TCK)" >&2 <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
a, b = [list(map(int, x.split())) for x in sys.argv[2:4]]
hz, n = int(sys.argv[4]), len(run["results"])
names = ["postgres backends", "postgres background", "gateway", "liveactivity", "apns-sim", "redis"]
parts = ["%s %.0f" % (name, (y - x) / hz * 1e6 / n) for name, x, y in zip(names, a, b)]
print("CPU per update (us): " + ", ".join(parts) + ", load generator %.0f; whole machine %.0f (%.0f%% of 2 cores)"
      % (run["cpu"] * 1e6 / n, (b[-1] - a[-1]) / hz * 1e6 / n, 100.0 * (b[-1] - a[-1]) / hz / run["elapsed"] / 2))
PY
}

# la_batches: requests per batch of the liveactivity replica so far (its bk_la_batch_requests).
la_batches() {
  curl -sf "http://127.0.0.1:$LAPORT/metrics" | awk '/^bk_la_batch_requests_sum/ {s=$2} /^bk_la_batch_requests_count/ {c=$2}
    END {if (c > 0) printf "%d %d\n", s, c; else print "0 0"}'
}

# BK_LA_PROFILE: where measurement 1's time went. Each update's stages from the ledger's own
# clocks (the deciding statement's now() is the message's created_at, the recording statement's
# the delivery's updated_at: inserted then since migration 0018, updated then before) and the simulator's receivedAt (ms), against the load
# generator's POST and answer times; then CPU per update by process, and Postgres's statements.
la_profile() {
  curl -sf "http://127.0.0.1:$CONTROLPORT/control/pushes?limit=1000000" >"$WORK/pushes.json"
  "${PSQL[@]}" -F ' ' >"$WORK/ledger.txt" <<SQL
SELECT (m.content->'liveActivity'->'contentState'->>'n')::int, extract(epoch FROM m.created_at),
       extract(epoch FROM d.updated_at)
FROM messages m JOIN deliveries d ON d.message_id = m.id
WHERE m.kind = 'live_activity' AND m.created_at > now() - interval '1 hour';
SQL
  python3 - "$WORK/rate.json" "$WORK/pushes.json" "$WORK/ledger.txt" >&2 <<'PY'
import json, sys
run = json.load(open(sys.argv[1])); pushes = json.load(open(sys.argv[2]))
pushes = pushes.get("data", pushes) if isinstance(pushes, dict) else pushes
if isinstance(pushes, dict): pushes = pushes.get("pushes", [])
arrived = {json.loads(p["payload"])["aps"]["content-state"]["n"]: p["receivedAt"] / 1000.0 for p in pushes}
ledger = {}
for line in open(sys.argv[3]):
    n, decided, recorded = line.split()
    ledger[int(n)] = (float(decided), float(recorded))
stages = {k: [] for k in ("POST -> decide", "decide -> simulator", "simulator -> record", "record -> answer")}
for n, wall, answer, ok in run["results"]:
    if n not in ledger or n not in arrived: continue
    decided, recorded = ledger[n]
    stages["POST -> decide"].append(decided - wall)
    stages["decide -> simulator"].append(arrived[n] - decided)
    stages["simulator -> record"].append(recorded - arrived[n])
    stages["record -> answer"].append(wall + answer - recorded)
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")
for name, xs in stages.items():
    print("stage %-22s p50 %7.1f ms  p90 %7.1f ms  p99 %7.1f ms" % (name, pct(xs, .5), pct(xs, .9), pct(xs, .99)))
PY
  cpu_per_update "$WORK/rate.json" "$CPU0" "$CPU1"
  read -r LA_REQUESTS LA_BATCHES <<<"$(la_batches)"
  [ "$LA_BATCHES" -gt 0 ] && echo "requests per batch: $(python3 -c "print(round($LA_REQUESTS / $LA_BATCHES, 2))")" >&2
  "${PSQL[@]}" -F ' | ' >&2 <<SQL
SELECT 'pg: ' || round(calls::numeric / $RATE / $SECONDS_AT_RATE, 2) || ' per update, ' ||
       round(mean_exec_time::numeric, 3) || ' ms each: ' || left(regexp_replace(query, '\s+', ' ', 'g'), 110)
FROM pg_stat_statements WHERE calls >= $RATE ORDER BY calls * mean_exec_time DESC LIMIT 14;
SQL
}

# 1. per entry of BK_APNS_TRANSPORTS (default "nghttp2", above): the replica restarts with it, the
# simulator's record is reset.
ROUND_LINES=()
for transport in ${BK_APNS_TRANSPORTS:-nghttp2}; do
start_la "$transport"
curl -sf -X POST "http://127.0.0.1:$CONTROLPORT/control/reset" >/dev/null
bk_log "1 ($transport). latency: $RATE updates/s for $SECONDS_AT_RATE s to $ACTIVITIES activities ($(bench_load_note))"
[ -n "${BK_LA_PROFILE:-}" ] && "${PSQL[@]}" -c "SELECT pg_stat_statements_reset()" >/dev/null
CPU0="$(cpu_snapshot)"
if [ -n "${BK_LA_PERF:-}" ]; then
  # Diagnostics only: 6 s of every process's stacks, machine-wide, half-way into the run.
  mkdir -p "$BK_LA_PERF"
  echo "gateway ${PIDS[1]} liveactivity ${PIDS[2]} sim ${PIDS[0]}" >"$BK_LA_PERF/pids.$transport"
  (sleep 5; perf record -F 499 -a -g -o "$BK_LA_PERF/perf.$transport.data" -- sleep 6 >/dev/null 2>&1) &
fi
python3 "$WORK/load.py" rate "$GWPORT" "$BUZZKIT_TENANT_KEY" "$ACTIVITIES" "$RATE" "$SECONDS_AT_RATE" "$CONNECTIONS" "$WORK/rate.json"
CPU1="$(cpu_snapshot)"
[ -n "${BK_LA_PROFILE:-}" ] && la_profile
RATE_CPU="$(cpu_per_update "$WORK/rate.json" "$CPU0" "$CPU1" 2>&1)"
curl -sf "http://127.0.0.1:$CONTROLPORT/control/pushes?limit=1000000" >"$WORK/pushes.json"
LATENCY="$(python3 - "$WORK/rate.json" "$WORK/pushes.json" "$ACTIVITIES" <<'PY'
import hashlib, json, sys
run = json.load(open(sys.argv[1])); pushes = json.load(open(sys.argv[2])); n_act = int(sys.argv[3])
pushes = pushes.get("data", pushes) if isinstance(pushes, dict) else pushes
if isinstance(pushes, dict): pushes = pushes.get("pushes", [])
arrived = {}
for p in pushes:
    payload = json.loads(p["payload"])
    arrived[payload["aps"]["content-state"]["n"]] = p["receivedAt"] / 1000.0
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")
reach = [arrived[n] - wall for n, wall, _, ok in run["results"] if n in arrived]
answer = [a for _, _, a, ok in run["results"]]
ok = sum(1 for r in run["results"] if r[3])
print("%d updates in %.1f s (%d answered sent, %d reached the simulator); POST to simulator p50 %.1f ms, p99 %.1f ms; "
      "POST to answer p50 %.1f ms, p99 %.1f ms"
      % (len(run["results"]), run["elapsed"], ok, len(reach), pct(reach, 0.5), pct(reach, 0.99), pct(answer, 0.5), pct(answer, 0.99)))
PY
)"
echo "$LATENCY" >&2
echo "$RATE_CPU" >&2
ROUND_LINES+=("$transport: live activity updates at $RATE/s to $ACTIVITIES activities: $LATENCY" "  $RATE_CPU")
done
if [ -n "${BK_LA_QUICK:-}" ]; then
  bk_log "simulator ceiling: h2load, 4 connections x 100 streams, same simulator process (recording) ($(bench_load_note))"
  read -r SIM_RPS H2LOAD_US < <(bench_h2load_ceiling "$SIMPORT" "$WORK/provider.ec.pem" BENCHKEY01 BENCHTEAM1)
  printf '%s\n' "${ROUND_LINES[@]}"
  echo "apns-sim ceiling (h2load 4x100, same process, recording): $SIM_RPS requests/s; h2load's own CPU $H2LOAD_US us per request"
  exit 0
fi

bk_log "2. most updates/s with per-token answers: closed loop, $CONNECTIONS connections, 10 s"
curl -sf -X POST "http://127.0.0.1:$CONTROLPORT/control/reset" >/dev/null
CPU0="$(cpu_snapshot)"
python3 "$WORK/load.py" closed "$GWPORT" "$BUZZKIT_TENANT_KEY" "$ACTIVITIES" 0 10 "$CONNECTIONS" "$WORK/closed.json"
CPU1="$(cpu_snapshot)"
if [ -n "${BK_LA_PROFILE:-}" ]; then
  cpu_per_update "$WORK/closed.json" "$CPU0" "$CPU1"
  read -r R1 B1 <<<"$(la_batches)"
  [ "$((B1 - ${LA_BATCHES:-0}))" -gt 0 ] && echo "requests per batch: $(python3 -c "print(round(($R1 - ${LA_REQUESTS:-0}) / ($B1 - ${LA_BATCHES:-0}), 2))")" >&2
fi
LA_RPS="$(python3 -c '
import json, sys
run = json.load(open(sys.argv[1])); ok = sum(1 for r in run["results"] if r[3])
print(round(ok / run["elapsed"]))' "$WORK/closed.json")"
LA_P50="$(python3 -c '
import json, sys
xs = sorted(r[2] for r in json.load(open(sys.argv[1]))["results"]); print("%.1f" % (xs[len(xs) // 2] * 1000))' "$WORK/closed.json")"

# Where an update's time goes: the APNs round trip as the ledger recorded it (latency_ms).
"${PSQL[@]}" >&2 <<SQL
SELECT 'live activity APNs latency ms p50 / p99 / max: ' || array_to_string(percentile_disc(ARRAY[0.5, 0.99, 1])
  WITHIN GROUP (ORDER BY a.latency_ms), ' / ')
  FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN messages m ON m.id = d.message_id
  WHERE m.kind = 'live_activity' AND m.created_at > now() - interval '1 hour';
SQL

bk_log "3. baseline: one message to a topic of $DEVICES devices, two apns-sender replicas"
kill "${PIDS[2]}" 2>/dev/null || true  # the liveactivity replica: the baseline runs without it
wait "${PIDS[2]}" 2>/dev/null || true
curl -sf -X POST "http://127.0.0.1:$CONTROLPORT/control/reset" >/dev/null
SENDER_PORTS=()
for r in a b; do
  SENDER_PORTS+=("$(bk_free_port)")
  BUZZKIT_HTTP_PORT="${SENDER_PORTS[-1]}" BUZZKIT_INSTANCE_ID="bench-sender-$r" BUZZKIT_DB_POOL_SIZE=8 \
    "$BIN/apns-sender" >"$WORK/sender-$r.log" 2>&1 &
  PIDS+=($!)
done
for port in "${SENDER_PORTS[@]}"; do
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
done
sleep 1
T0="$(date +%s.%N)"
REPLY="$(curl -sf -X POST "http://127.0.0.1:$GWPORT/v1/messages" -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" \
  -H 'Content-Type: application/json' -d '{"topic":"everyone","title":"Hello","body":"A benchmark push to everyone","data":{"k":1}}')"
ID="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["id"])' "$REPLY")"
DEADLINE=$(( $(date +%s) + 300 ))
while :; do
  DONE="$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE message_id = '$ID' AND status NOT IN ('queued', 'sending')")"
  [ "$DONE" -ge "$DEVICES" ] && break
  [ "$(date +%s)" -lt "$DEADLINE" ] || bk_die "timed out: $DONE of $DEVICES deliveries recorded"
  sleep 0.5
done
T1="$("${PSQL[@]}" -c "SELECT extract(epoch FROM max(updated_at)) FROM deliveries WHERE message_id = '$ID'")"
PUSH_RPS="$(python3 -c "print(round($DEVICES / ($T1 - $T0)))")"

bk_log "simulator ceiling: h2load, 4 connections x 100 streams, same simulator process (recording) ($(bench_load_note))"
curl -sf -X POST "http://127.0.0.1:$CONTROLPORT/control/reset" >/dev/null
read -r SIM_RPS H2LOAD_US < <(bench_h2load_ceiling "$SIMPORT" "$WORK/provider.ec.pem" BENCHKEY01 BENCHTEAM1)
printf '%s\n' "${ROUND_LINES[@]}"
echo "(goal: p50 < 5 ms, p99 < 20 ms; CPU per update at $RATE/s with nghttp2 at most half the curl round's)"
echo "live activity updates, closed loop ($CONNECTIONS connections, last transport): $LA_RPS updates/s answered per token (answer p50 $LA_P50 ms)"
echo "topic send, $DEVICES devices, 2 apns-sender replicas (same run):  $PUSH_RPS deliveries/s"
echo "apns-sim ceiling (h2load 4x100, same process, recording): $SIM_RPS requests/s; h2load's own CPU $H2LOAD_US us per request"
python3 -c "print('ratio: live activity updates/s = %.1f%% of the topic send rate' % (100.0 * $LA_RPS / $PUSH_RPS))"
