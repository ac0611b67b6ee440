#!/usr/bin/env bash
# Redis streams through BuzzKitRedis vs raw redis-benchmark, in the same run, on loopback.
#   produce: pipelined XADD via RedisClient.xaddBatch  vs  redis-benchmark XADD -P 64 -c 50
#   consume: StreamConsumer read + ack (trivial handler) of the same entries
# Usage: bench/redis_streams.sh [count]   (default 200000; bounded: everything stops on exit)
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
cd "$BK_ROOT"

COUNT="${1:-200000}"
PAYLOAD=300
RUN_DIR="$(mktemp -d /tmp/buzzkit-bench-redis.XXXXXX)"
cleanup() { bk_stop_redis "$RUN_DIR/redis"; rm -rf "$RUN_DIR"; }
trap cleanup EXIT

bk_log "building buzzkit-bench (release)"
swift build -c release --product buzzkit-bench --scratch-path .build-release-bench >/dev/null
BENCH="$(swift build -c release --show-bin-path --scratch-path .build-release-bench)/buzzkit-bench"

PORT="$(bk_free_port)"
# Benchmarks measure the data path, not the disk: no AOF here (bk_start_redis enables it, so
# start our own server the same way minus persistence).
mkdir -p "$RUN_DIR/redis"
redis-server --bind 127.0.0.1 --port "$PORT" --dir "$RUN_DIR/redis" --appendonly no --save "" \
  --daemonize yes --pidfile "$RUN_DIR/redis/redis.pid" --logfile "$RUN_DIR/redis/redis.log" >/dev/null
for _ in $(seq 1 100); do redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done

VALUE="$(head -c "$PAYLOAD" /dev/zero | tr '\0' x)"
bk_log "raw: redis-benchmark XADD, $COUNT entries of $PAYLOAD B, 50 clients, pipeline 64"
RAW="$(timeout 120 redis-benchmark -h 127.0.0.1 -p "$PORT" -n "$COUNT" -c 50 -P 64 --csv \
  XADD bench:raw '*' payload "$VALUE" | tail -1 | cut -d, -f2 | tr -d '"')"
redis-cli -p "$PORT" del bench:raw >/dev/null

bk_log "swift: RedisClient.xaddBatch (4 producers, 1000 per pipeline) then StreamConsumer (batch 500)"
OUT="$(timeout 300 "$BENCH" redis-streams --url "redis://127.0.0.1:$PORT" --count "$COUNT" --payload "$PAYLOAD")"
echo "$OUT"
PRODUCE="$(echo "$OUT" | awk '/^produce_rate/ {print $2}')"
CONSUME="$(echo "$OUT" | awk '/^consume_rate/ {print $2}')"

python3 - "$RAW" "$PRODUCE" "$CONSUME" <<'PY'
import sys
raw, produce, consume = (float(x) for x in sys.argv[1:4])
print(f"raw redis-benchmark XADD:        {raw:>10,.0f} entries/s")
print(f"swift produce (pipelined XADD):  {produce:>10,.0f} entries/s  ratio {produce / raw:.2f}")
print(f"swift consume (read + ack):      {consume:>10,.0f} entries/s  ratio {consume / raw:.2f} (vs raw XADD)")
PY
