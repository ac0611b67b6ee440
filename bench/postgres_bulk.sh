#!/usr/bin/env bash
# Bulk write throughput of BuzzKitPostgres vs psql's own COPY, same rows, same server, same run.
#
#   bench/postgres_bulk.sh [rows]      (default 100000 rows of ~530 bytes with a jsonb column)
#
# Starts a throwaway PostgreSQL on a free loopback port, writes the rows three times each way
# (psql `\copy ... FROM file`, Swift `client.copy`, Swift multi-row `client.insert`), prints the best
# round of each and the ratio to psql, and stops the server. Bounded: a few seconds per round.
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
cd "$BK_ROOT"
ROWS="${1:-100000}"
ROUNDS=3

bk_log "building buzzkit-bench (release)"
swift build -c release --product buzzkit-bench --scratch-path .build-release-bench >/dev/null
BENCH="$(swift build -c release --scratch-path .build-release-bench --show-bin-path)/buzzkit-bench"

DIR="$(mktemp -d /tmp/buzzkit-pgbench.XXXXXX)"
chmod 755 "$DIR"
cleanup() { bk_stop_postgres "$DIR/pg"; rm -rf "$DIR"; }
trap cleanup EXIT
PORT="$(bk_free_port)"
bk_start_postgres "$DIR/pg" "$PORT"
URL="postgres://buzzkit@127.0.0.1:$PORT/buzzkit"
PSQL=(psql -X -q -h 127.0.0.1 -p "$PORT" -U buzzkit -d buzzkit -v ON_ERROR_STOP=1)

for t in bench_psql bench_swift bench_insert; do
  "${PSQL[@]}" -c "CREATE UNLOGGED TABLE IF NOT EXISTS $t (id uuid, message_id uuid, device_token text, status text, attempt int, created_at timestamptz, payload jsonb)" >/dev/null
  "${PSQL[@]}" -c "ALTER TABLE $t SET LOGGED" >/dev/null
done
COLS="id, message_id, device_token, status, attempt, created_at, payload"

"$BENCH" postgres-bulk --mode file --rows "$ROWS" --out "$DIR/rows.copy"
"${PSQL[@]}" -c "\\copy bench_psql ($COLS) FROM '$DIR/rows.copy'" # warm-up (jsonb, caches)

now_ns() { date +%s%N; }
best_psql=0; best_copy=0; best_insert=0
for round in $(seq 1 $ROUNDS); do
  "${PSQL[@]}" -c "TRUNCATE bench_psql, bench_swift, bench_insert; CHECKPOINT" >/dev/null
  t0=$(now_ns)
  "${PSQL[@]}" -c "\\copy bench_psql ($COLS) FROM '$DIR/rows.copy'"
  t1=$(now_ns)
  psql_rate=$(( ROWS * 1000000000 / (t1 - t0) ))
  copy_line=$("$BENCH" postgres-bulk --mode copy --url "$URL" --table bench_swift --rows "$ROWS")
  insert_line=$("$BENCH" postgres-bulk --mode insert --url "$URL" --table bench_insert --rows "$ROWS")
  copy_rate=${copy_line##*rows_per_s=}
  insert_rate=${insert_line##*rows_per_s=}
  echo "round $round: psql COPY $psql_rate rows/s | swift copy $copy_rate rows/s | swift insert $insert_rate rows/s"
  [ "$psql_rate" -gt "$best_psql" ] && best_psql=$psql_rate
  [ "$copy_rate" -gt "$best_copy" ] && best_copy=$copy_rate
  [ "$insert_rate" -gt "$best_insert" ] && best_insert=$insert_rate
done

count=$("${PSQL[@]}" -tAc "SELECT (SELECT count(*) FROM bench_swift) || ' ' || (SELECT count(*) FROM bench_insert) || ' ' || (SELECT count(*) FROM bench_psql)")
same=$("${PSQL[@]}" -tAc "SELECT count(*) FROM (SELECT * FROM bench_swift EXCEPT SELECT * FROM bench_psql) d")
echo "rows in tables (swift copy, swift insert, psql): $count; swift rows not in psql's: $same"
echo "best psql COPY FROM STDIN : $best_psql rows/s"
echo "best swift client.copy    : $best_copy rows/s  ($(( best_copy * 100 / best_psql ))% of psql)"
echo "best swift client.insert  : $best_insert rows/s  ($(( best_insert * 100 / best_psql ))% of psql)"
