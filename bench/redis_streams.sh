#!/usr/bin/env bash
# Redis streams through BuzzKitRedis vs raw redis-benchmark, in the same run, on loopback.
#   produce: pipelined XADD via RedisClient.xaddBatch  vs  redis-benchmark XADD -P 64 -c 50
#   consume: StreamConsumer read + ack (trivial handler, batch 500)  vs  bench/baseline/redis_consume.c
#            (hiredis XREADGROUP COUNT 500 + XACK of the same ids, over the entries redis-benchmark
#            added; run sequentially and with the ack pipelined with the next read: the better is the baseline)
# Usage: bench/redis_streams.sh [count]   (default 200000; bounded: everything stops on exit)
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
cd "$BK_ROOT"

COUNT="${1:-200000}"
PAYLOAD=300
RUN_DIR="$(mktemp -d /tmp/buzzkit-bench-redis.XXXXXX)"
cleanup() { bk_stop_redis "$RUN_DIR/redis"; rm -rf "$RUN_DIR"; }
trap cleanup EXIT

command -v gcc >/dev/null || bk_die "gcc is required for the C baseline"
BATCH=500
bk_log "compiling the C consume baseline"
gcc -O2 -o "$RUN_DIR/redis_consume" bench/baseline/redis_consume.c -lhiredis

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

bk_log "raw: C consumer (XREADGROUP COUNT $BATCH + XACK) over those entries, sequential and pipelined"
RAW_SEQ_OUT="$(timeout 120 "$RUN_DIR/redis_consume" 127.0.0.1 "$PORT" bench:raw seq "$COUNT" "$BATCH" seq)"
RAW_PIPE_OUT="$(timeout 120 "$RUN_DIR/redis_consume" 127.0.0.1 "$PORT" bench:raw pipe "$COUNT" "$BATCH" pipe)"
RAW_SEQ="$(echo "$RAW_SEQ_OUT" | awk '/^consume_rate/ {print $2}')"
RAW_PIPE="$(echo "$RAW_PIPE_OUT" | awk '/^consume_rate/ {print $2}')"
echo "$RAW_SEQ_OUT" | sed 's/^/c seq:  /'
echo "$RAW_PIPE_OUT" | sed 's/^/c pipe: /'
redis-cli -p "$PORT" del bench:raw >/dev/null

bk_log "swift: RedisClient.xaddBatch (4 producers, 1000 per pipeline) then StreamConsumer (batch 500)"
OUT="$(timeout 300 "$BENCH" redis-streams --url "redis://127.0.0.1:$PORT" --count "$COUNT" --payload "$PAYLOAD" --batch "$BATCH")"
echo "$OUT"
PRODUCE="$(echo "$OUT" | awk '/^produce_rate/ {print $2}')"
CONSUME="$(echo "$OUT" | awk '/^consume_rate/ {print $2}')"

python3 - "$RAW" "$PRODUCE" "$RAW_SEQ" "$RAW_PIPE" "$CONSUME" <<'PY'
import sys
raw, produce, raw_seq, raw_pipe, consume = (float(x) for x in sys.argv[1:6])
raw_consume = max(raw_seq, raw_pipe)
print(f"raw redis-benchmark XADD (50 conn, -P 64):    {raw:>10,.0f} entries/s")
print(f"swift produce (xaddBatch, 4 x 1000 pipelined): {produce:>10,.0f} entries/s  ratio {produce / raw:.2f}")
print(f"raw C consume, sequential read/ack:           {raw_seq:>10,.0f} entries/s")
print(f"raw C consume, ack pipelined with next read:  {raw_pipe:>10,.0f} entries/s")
print(f"swift consume (StreamConsumer):               {consume:>10,.0f} entries/s  ratio {consume / raw_consume:.2f} (vs best raw consume)")
PY
