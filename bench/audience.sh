#!/usr/bin/env bash
# bench/audience.sh: audiences on 1,000,000 subscribers and 10,000,000 events.
#
# Starts a throwaway Postgres (fsync off while generating), applies the migrations, generates the
# data in SQL (generate_series), ANALYZEs, then for the four common shapes times
#   count:  SELECT count(*) ... (best of 3), and
#   pages:  keyset pages of 1000 (AudienceQuery.page, the first MAX_PAGES), and
#   cursor: the whole audience through one statement (AudienceQuery.all) read by a cursor,
# with the raw baseline measured in the same run: count(*) of all the tenant's subscribers and
# streaming with no condition. EXPLAIN (ANALYZE, BUFFERS) plans go to
# bench/results/audience-<time>/. Goals: each count under 1 s; each audience streamed through one
# cursor (the fan-out's AudienceCursor) faster than the sender delivers (SENDER_RATE, default 5200/s).
#
# The SQL below is exactly what BuzzKitAudience's AudienceQuery emits for these expressions (the
# test AudienceBenchSQLTests fails when they drift); values are bound as parameters, as the
# gateway binds them (plan_cache_mode = force_custom_plan, like libpq's unnamed statements), and
# every statement runs after SETTINGS below, AudienceQuery.settings as SET commands (the same test
# checks them): sorted groupings and merge joins, no hash aggregate, hash join or nested loop.
#   A  plan == "pro"
#   B  did("workout.completed", within: "7d")
#   C  count("app.opened", within: "30d") >= 3
#   D  in_topic("sports")
# Env: SUBSCRIBERS (default 1000000), EVENTS (default 10000000), MAX_PAGES (keyset pages timed, 20),
# KEEP_DATA=1 (leave the Postgres running afterwards), ONLY_GENERATE=1 (stop after generating).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/deploy/lib/common.sh"

SUBSCRIBERS="${SUBSCRIBERS:-1000000}"
EVENTS="${EVENTS:-10000000}"
MAX_PAGES="${MAX_PAGES:-20}"
TENANT="00000000-0000-4000-8000-0000000000b1"
RESULTS="$ROOT/bench/results/audience-$(date +%Y%m%d-%H%M%S)"
RUN_DIR="$(mktemp -d /tmp/bk-audience-bench.XXXXXX)"
chmod 755 "$RUN_DIR"
mkdir -p "$RESULTS"

# KEEP_DATA=1 leaves the Postgres with the generated data running (for experiments) and prints
# how to reach and stop it; otherwise everything started here is stopped on exit.
cleanup() {
  if [ "${KEEP_DATA:-0}" = 1 ]; then
    bk_log "kept: psql -h 127.0.0.1 -p $PORT -U buzzkit buzzkit; stop with: source deploy/lib/common.sh; bk_stop_postgres $RUN_DIR/pg"
    return
  fi
  bk_stop_postgres "$RUN_DIR/pg"; rm -rf "$RUN_DIR"
}
trap cleanup EXIT

PORT="$(bk_free_port)"
BK_PG_FSYNC=off BK_PG_SYNC_COMMIT=off bk_start_postgres "$RUN_DIR/pg" "$PORT"
export PGHOST=127.0.0.1 PGPORT="$PORT" PGUSER=buzzkit PGDATABASE=buzzkit
q() { psql -X -v ON_ERROR_STOP=1 -q "$@"; }

START=$SECONDS
for f in "$ROOT"/Shared/Migrations/SQL/*.sql; do q -f "$f" >/dev/null; done

# ---- The SQL AudienceQuery emits (count, then page with cursor) --------------------------------
SQL_A_COUNT='SELECT count(*) FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.attributes @> $2::jsonb'
SQL_A_PAGE='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.attributes @> $2::jsonb AND s.id > $3::text ORDER BY s.id LIMIT $4::int8'
SQL_A_ALL='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.attributes @> $2::jsonb ORDER BY s.id'
SQL_B_COUNT='SELECT count(*) FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id IN (SELECT e.subscriber_id COLLATE "C" AS sid FROM events e WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz UNION ALL SELECT a.subscriber_id FROM events e JOIN subscriber_aliases a ON a.tenant_id = e.tenant_id AND a.anonymous_id = e.subscriber_id AND a.subscriber_id <> e.subscriber_id WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz)'
SQL_B_PAGE='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id IN (SELECT e.subscriber_id COLLATE "C" AS sid FROM events e WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz AND e.subscriber_id COLLATE "C" > $5::text UNION ALL SELECT a.subscriber_id FROM events e JOIN subscriber_aliases a ON a.tenant_id = e.tenant_id AND a.anonymous_id = e.subscriber_id AND a.subscriber_id <> e.subscriber_id WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz AND a.subscriber_id > $5::text) AND s.id > $5::text ORDER BY s.id LIMIT $6::int8'
SQL_B_ALL='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id IN (SELECT e.subscriber_id COLLATE "C" AS sid FROM events e WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz UNION ALL SELECT a.subscriber_id FROM events e JOIN subscriber_aliases a ON a.tenant_id = e.tenant_id AND a.anonymous_id = e.subscriber_id AND a.subscriber_id <> e.subscriber_id WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz) ORDER BY s.id'
SQL_C_COUNT='SELECT count(*) FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id IN (SELECT o.sid FROM ((SELECT e.subscriber_id COLLATE "C" AS sid FROM events e WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz ORDER BY 1) UNION ALL (SELECT a.subscriber_id FROM events e JOIN subscriber_aliases a ON a.tenant_id = e.tenant_id AND a.anonymous_id = e.subscriber_id AND a.subscriber_id <> e.subscriber_id WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz ORDER BY 1)) o GROUP BY o.sid HAVING count(*) >= $5::int8)'
SQL_C_PAGE='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id IN (SELECT o.sid FROM ((SELECT e.subscriber_id COLLATE "C" AS sid FROM events e WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz AND e.subscriber_id COLLATE "C" > $6::text ORDER BY 1) UNION ALL (SELECT a.subscriber_id FROM events e JOIN subscriber_aliases a ON a.tenant_id = e.tenant_id AND a.anonymous_id = e.subscriber_id AND a.subscriber_id <> e.subscriber_id WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz AND a.subscriber_id > $6::text ORDER BY 1)) o GROUP BY o.sid HAVING count(*) >= $5::int8) AND s.id > $6::text ORDER BY s.id LIMIT $7::int8'
SQL_C_ALL='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id IN (SELECT o.sid FROM ((SELECT e.subscriber_id COLLATE "C" AS sid FROM events e WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz ORDER BY 1) UNION ALL (SELECT a.subscriber_id FROM events e JOIN subscriber_aliases a ON a.tenant_id = e.tenant_id AND a.anonymous_id = e.subscriber_id AND a.subscriber_id <> e.subscriber_id WHERE e.tenant_id = $1::uuid AND e.name = $2::text AND e.occurred_at >= $3::timestamptz AND e.occurred_at <= $4::timestamptz ORDER BY 1)) o GROUP BY o.sid HAVING count(*) >= $5::int8) ORDER BY s.id'
SQL_D_COUNT='SELECT count(*) FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id IN (SELECT ts.subscriber_id FROM topic_subscriptions ts WHERE ts.tenant_id = $1::uuid AND ts.topic_key = $2::text)'
SQL_D_PAGE='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id IN (SELECT ts.subscriber_id FROM topic_subscriptions ts WHERE ts.tenant_id = $1::uuid AND ts.topic_key = $2::text) AND s.id > $3::text ORDER BY s.id LIMIT $4::int8'
SQL_D_ALL='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id IN (SELECT ts.subscriber_id FROM topic_subscriptions ts WHERE ts.tenant_id = $1::uuid AND ts.topic_key = $2::text) ORDER BY s.id'
# Baseline: every subscriber of the tenant, no condition.
SQL_RAW_COUNT='SELECT count(*) FROM subscribers s WHERE s.tenant_id = $1::uuid'
SQL_RAW_PAGE='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid AND s.id > $2::text ORDER BY s.id LIMIT $3::int8'
SQL_RAW_ALL='SELECT s.id FROM subscribers s WHERE s.tenant_id = $1::uuid ORDER BY s.id'

NOW="$(q -tAc "SELECT to_char(date_trunc('second', now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")"
FROM7="$(q -tAc "SELECT to_char((timestamptz '$NOW' - interval '7 days') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")"
FROM30="$(q -tAc "SELECT to_char((timestamptz '$NOW' - interval '30 days') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")"

# ---- Data -----------------------------------------------------------------------------------------
bk_log "generating $SUBSCRIBERS subscribers and $EVENTS events"
q <<SQL
SET maintenance_work_mem = '512MB';
SELECT setseed(0.42) AS seeded \gset
INSERT INTO workspaces (id, name) VALUES ('00000000-0000-4000-8000-0000000000a1', 'bench');
INSERT INTO tenants (id, workspace_id, name) VALUES ('$TENANT', '00000000-0000-4000-8000-0000000000a1', 'bench');
INSERT INTO topics (tenant_id, key) VALUES ('$TENANT', 'sports'), ('$TENANT', 'news');
-- The indexes are built after loading (much faster than maintaining them row by row).
DROP INDEX subscribers_attributes;
DROP INDEX events_name_time;
DROP INDEX events_name_subscriber;
DROP INDEX events_subscriber_time;
ALTER TABLE topic_subscriptions DROP CONSTRAINT topic_subscriptions_tenant_id_subscriber_id_fkey;
INSERT INTO subscribers (tenant_id, id, attributes, timezone, locale, created_at)
SELECT '$TENANT', 'u' || lpad(i::text, 7, '0'),
       jsonb_build_object(
           'plan', (ARRAY['free','pro','team','trial','basic','plus','max','edu','legacy','enterprise'])[1 + (i::int8 * 7919) % 10],
           'age', 13 + (i * 31) % 70,
           'country', (ARRAY['DE','AT','US','FR','GB'])[1 + i % 5],
           'profile', jsonb_build_object('city', 'city' || (i % 97), 'newsletter', i % 3 = 0)),
       (ARRAY['Europe/Berlin','America/New_York','Asia/Tokyo'])[1 + i % 3], 'en-US',
       timestamptz '$NOW' - (i % 400) * interval '1 day'
FROM generate_series(1, $SUBSCRIBERS) i;
INSERT INTO topic_subscriptions (tenant_id, topic_key, subscriber_id)
SELECT '$TENANT'::uuid, 'sports', 'u' || lpad(i::text, 7, '0') FROM generate_series(1, $SUBSCRIBERS) i WHERE (i * 13) % 10 = 3
UNION ALL
SELECT '$TENANT'::uuid, 'news', 'u' || lpad(i::text, 7, '0') FROM generate_series(1, $SUBSCRIBERS) i WHERE i % 5 = 1;
ALTER TABLE topic_subscriptions ADD FOREIGN KEY (tenant_id, subscriber_id) REFERENCES subscribers (tenant_id, id) ON DELETE CASCADE;
-- 10,000 anonymous ids aliased to subscribers (their events are the subscriber's too).
INSERT INTO subscriber_aliases (tenant_id, anonymous_id, subscriber_id)
SELECT '$TENANT', 'anon' || i, 'u' || lpad((i * 97 % $SUBSCRIBERS + 1)::text, 7, '0') FROM generate_series(1, 10000) i;
-- Events over the last 60 days: 30% app.opened, 10% workout.completed, the rest 18 other names;
-- 1% under an aliased anonymous id.
INSERT INTO events (tenant_id, event_id, name, subscriber_id, occurred_at)
SELECT '$TENANT', 'e' || n,
       CASE WHEN r < 0.3 THEN 'app.opened' WHEN r < 0.4 THEN 'workout.completed' ELSE 'other.' || (n % 18) END,
       CASE WHEN n % 100 = 0 THEN 'anon' || (1 + n / 100 % 10000)
            ELSE 'u' || lpad((1 + floor(random() * $SUBSCRIBERS))::int::text, 7, '0') END,
       timestamptz '$NOW' - random() * interval '60 days'
FROM (SELECT n, random() AS r FROM generate_series(1, $EVENTS) n) g;
SQL
bk_log "data generated in $((SECONDS - START)) s; building indexes"
# The same definitions as migrations 0003, 0005 and 0008 (0007 dropped events_subscriber_name).
q <<SQL
SET maintenance_work_mem = '512MB';
SET max_parallel_maintenance_workers = 2;
CREATE INDEX subscribers_attributes ON subscribers USING gin (attributes jsonb_path_ops);
CREATE INDEX events_name_time ON events (tenant_id, name, occurred_at) INCLUDE (subscriber_id);
CREATE INDEX events_name_subscriber ON events (tenant_id, name, subscriber_id COLLATE "C", occurred_at);
VACUUM ANALYZE;
SQL
bk_log "indexes built and analyzed at $((SECONDS - START)) s (events_subscriber_time left out: audiences never read it)"
[ "${ONLY_GENERATE:-0}" = 1 ] && exit 0

# ---- Measure --------------------------------------------------------------------------------------
# The planner settings every audience statement runs with (AudienceQuery.settings, SET LOCAL in
# the gateway's and the fan-out's transactions).
SETTINGS="SET plan_cache_mode = force_custom_plan; SET max_parallel_workers_per_gather = 0; SET jit = off; SET work_mem = '64MB'; SET cursor_tuple_fraction = 1; SET enable_hashagg = off; SET enable_hashjoin = off; SET enable_nestloop = off;"
# The sender's delivery rate (docs/benchmarks.md, bench/push_fanout.sh): the audience stream must be faster.
SENDER_RATE="${SENDER_RATE:-5200}"
# shape_run NAME "COUNT_SQL" "PAGE_SQL" "ALL_SQL" "params before the cursor (SQL literals, comma separated)"
shape_run() {
  local name="$1" count_sql="$2" page_sql="$3" all_sql="$4" params="$5"
  local out best rows pages page_ms total all_ms
  out="$(q <<SQL
$SETTINGS
PREPARE c AS $count_sql;
\timing on
EXECUTE c($params);
EXECUTE c($params);
EXECUTE c($params);
SQL
)"
  best="$(grep -o 'Time: [0-9.]*' <<<"$out" | awk '{print $2}' | sort -n | head -1)"
  rows="$(grep -E '^ *[0-9]+ *$' <<<"$out" | head -1 | tr -d ' ')"
  q >"$RESULTS/$name-count.plan.txt" <<SQL
$SETTINGS
PREPARE c AS $count_sql;
EXPLAIN (ANALYZE, BUFFERS) EXECUTE c($params);
SQL
  q >"$RESULTS/$name-page.plan.txt" <<SQL
$SETTINGS
PREPARE p AS $page_sql;
EXPLAIN (ANALYZE, BUFFERS) EXECUTE p($params, '', 1000);
SQL
  # Keyset pages of 1000 (the page SQL as is, bound values), at most $MAX_PAGES pages.
  out="$(q 2>&1 <<SQL
$SETTINGS
DO \$do\$
DECLARE
  cursor_id text := '';
  page text[];
  pages int := 0;
  started timestamptz := clock_timestamp();
BEGIN
  LOOP
    EXECUTE 'SELECT array_agg(id ORDER BY id) FROM (' || \$sql\$$page_sql\$sql\$ || ') p' INTO page USING $params, cursor_id, 1000;
    EXIT WHEN page IS NULL;
    pages := pages + 1;
    cursor_id := page[cardinality(page)];
    EXIT WHEN cardinality(page) < 1000 OR pages >= $MAX_PAGES;
  END LOOP;
  RAISE NOTICE 'PAGES % %', pages, round(extract(epoch FROM clock_timestamp() - started) * 1000 / greatest(pages, 1), 2);
END
\$do\$;
SQL
)"
  read -r _ pages page_ms < <(grep -o 'PAGES [0-9]* [0-9.]*' <<<"$out")
  # The whole audience through one statement read by a cursor (AudienceQuery.all).
  out="$(q 2>&1 <<SQL
$SETTINGS
DO \$do\$
DECLARE
  r record;
  total bigint := 0;
  started timestamptz := clock_timestamp();
BEGIN
  FOR r IN EXECUTE \$sql\$$all_sql\$sql\$ USING $params LOOP
    total := total + 1;
  END LOOP;
  RAISE NOTICE 'ALL % %', total, round(extract(epoch FROM clock_timestamp() - started) * 1000, 1);
END
\$do\$;
SQL
)"
  read -r _ total all_ms < <(grep -o 'ALL [0-9]* [0-9.]*' <<<"$out")
  echo "$name $best $rows $pages $page_ms $total $all_ms"
}

RAW_LINE="$(shape_run raw "$SQL_RAW_COUNT" "$SQL_RAW_PAGE" "$SQL_RAW_ALL" "'$TENANT'")"
read -r _ RAW_COUNT_MS _ _ RAW_PAGE_MS RAW_TOTAL RAW_ALL_MS <<<"$RAW_LINE"
RAW_RATE="$(awk -v n="$RAW_TOTAL" -v ms="$RAW_ALL_MS" 'BEGIN{printf "%.0f", n/(ms/1000)}')"

printf '\n%-32s %9s %9s %7s %11s %7s %14s %7s %9s\n' "shape" "audience" "count ms" "x raw" "ms per page" "x raw" "cursor ids/s" "x raw" "x sender"
MISSED=""
for shape in A B C D; do
  case $shape in
    A) line="$(shape_run A-attribute-equality "$SQL_A_COUNT" "$SQL_A_PAGE" "$SQL_A_ALL" "'$TENANT', '{\"plan\": \"pro\"}'")"; label='plan == "pro"' ;;
    B) line="$(shape_run B-did-within "$SQL_B_COUNT" "$SQL_B_PAGE" "$SQL_B_ALL" "'$TENANT', 'workout.completed', '$FROM7', '$NOW'")"; label='did("workout.completed", 7d)' ;;
    C) line="$(shape_run C-count-at-least "$SQL_C_COUNT" "$SQL_C_PAGE" "$SQL_C_ALL" "'$TENANT', 'app.opened', '$FROM30', '$NOW', 3")"; label='count("app.opened", 30d) >= 3' ;;
    D) line="$(shape_run D-topic-membership "$SQL_D_COUNT" "$SQL_D_PAGE" "$SQL_D_ALL" "'$TENANT', 'sports'")"; label='in_topic("sports")' ;;
  esac
  read -r _ count_ms rows pages page_ms total all_ms <<<"$line"
  rate="$(awk -v n="$total" -v ms="$all_ms" 'BEGIN{printf "%.0f", (ms>0)?n/(ms/1000):0}')"
  printf '%-32s %9s %9s %7s %11s %7s %14s %7s %9s\n' "$label" "$rows" "$count_ms" \
    "$(awk -v a="$count_ms" -v b="$RAW_COUNT_MS" 'BEGIN{printf "%.2f", a/b}')" "$page_ms" \
    "$(awk -v a="$page_ms" -v b="$RAW_PAGE_MS" 'BEGIN{printf "%.1f", (b>0)?a/b:0}')" "$rate" \
    "$(awk -v a="$rate" -v b="$RAW_RATE" 'BEGIN{printf "%.2f", (b>0)?a/b:0}')" \
    "$(awk -v a="$rate" -v b="$SENDER_RATE" 'BEGIN{printf "%.1f", a/b}')"
  awk -v ms="$count_ms" 'BEGIN{exit !(ms >= 1000)}' && MISSED="$MISSED count:$shape"
  awk -v r="$rate" -v b="$SENDER_RATE" 'BEGIN{exit !(r < b)}' && MISSED="$MISSED stream:$shape"
done
printf '\nraw baseline (no condition, all %s subscribers): count %s ms, %s ms per keyset page, cursor %s ids/s.\n' \
  "$SUBSCRIBERS" "$RAW_COUNT_MS" "$RAW_PAGE_MS" "$RAW_RATE"
printf 'Keyset pages: the first %s pages of 1000. Plans: %s\nTotal %s s.\n' "$MAX_PAGES" "$RESULTS" "$((SECONDS - START))"
printf 'Streaming: the audience read through one cursor (AudienceQuery.all, as the fan-out does) vs the sender'"'"'s %s deliveries/s (SENDER_RATE).\n' "$SENDER_RATE"
if [ -n "$MISSED" ]; then echo "Goal missed:$MISSED (count < 1 s, stream >= sender rate)"; else echo "Goals met: every count < 1 s, every stream >= the sender's rate."; fi
