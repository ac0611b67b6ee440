#!/usr/bin/env bash
# Events ingest: events/s through IngestProducer (XADD on bk:ingest) + the ingest consumers into
# PostgreSQL (committed, fsync on) vs a raw COPY of the same rows into `events`, in the same run.
# The ingest half alone; bench/events_gateway.sh measures the whole path through POST /v1/events.
# Usage: bench/events_ingest.sh [events]   (default 300000; bounded; stops everything it starts)
# Release binaries go to $BUZZKIT_BENCH_SCRATCH (default .build-release-bench).
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

EVENTS="${1:-300000}"
RUN_DIR="$(mktemp -d /tmp/buzzkit-bench-events.XXXXXX)"
chmod 755 "$RUN_DIR"
cleanup() { bk_stop_postgres "$RUN_DIR/pg"; bk_stop_redis "$RUN_DIR/redis"; rm -rf "$RUN_DIR"; }
trap cleanup EXIT

# The ingest service's parts run inside buzzkit-bench (`buzzkit-bench events-ingest`).
bk_log "building buzzkit-bench (release)"
BENCH="$(bench_release_build "${BUZZKIT_BENCH_SCRATCH:-.build-release-bench}" buzzkit-bench)/buzzkit-bench"

# Durable settings: Postgres with fsync and synchronous_commit on; Redis with AOF everysec.
bench_migrated_databases "$RUN_DIR"

bk_log "ingest: $EVENTS events in batches of 100 (4 producers, 2 consumers), then COPY of the same rows"
OUT="$(timeout 600 "$BENCH" events-ingest --postgres "$PG_URL" --redis "$REDIS_URL" --events "$EVENTS")"
echo "$OUT"
DURABLE="$(echo "$OUT" | awk '/^durable_rate/ {print $2}')"
PRODUCE="$(echo "$OUT" | awk '/^produce_rate/ {print $2}')"
COPY="$(echo "$OUT" | awk '/^copy_rate/ {print $2}')"

python3 - "$COPY" "$PRODUCE" "$DURABLE" <<'PY'
import sys
copy, produce, durable = (float(x) for x in sys.argv[1:4])
print(f"raw COPY into events (2 streams):      {copy:>10,.0f} events/s")
print(f"accepted on bk:ingest (IngestProducer): {produce:>10,.0f} events/s")
print(f"durable in Postgres (ingest service):   {durable:>10,.0f} events/s  ratio {durable / copy:.2f} of COPY")
print(f"goal: >= 50,000 events/s durable and >= 0.40 of COPY: {'met' if durable >= 50000 and durable / copy >= 0.4 else 'NOT met'}")
PY
