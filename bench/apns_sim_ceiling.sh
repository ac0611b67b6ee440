#!/usr/bin/env bash
# APNs simulator ceiling: h2load (HTTP/2 over TLS, loopback) against the release build of
# apns-sim with recording off and a real ES256 provider token on every request, and, in the same
# run, against nghttpd (nghttp2's own static server, no validation) as the raw baseline.
# Usage: bench/apns_sim_ceiling.sh [requests, default 200000]. Stops everything it starts.
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

REQUESTS="${1:-200000}"
command -v h2load >/dev/null || bk_die "h2load missing (apt-get install nghttp2-client)"

WORK="$(mktemp -d /tmp/bk-apns-sim-bench.XXXXXX)"
PIDS=()
cleanup() {
  bench_stop_pids
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bk_log "building apns-sim (release)"
SIM="$(bench_release_build .build-release-sim apns-sim)/apns-sim"

Tools/apns-sim/make-certs.sh "$WORK/certs"
openssl ecparam -name prime256v1 -genkey -noout -out "$WORK/provider.pem" 2>/dev/null
openssl pkey -in "$WORK/provider.pem" -pubout -out "$WORK/provider.pub.pem"

JWT="$(bench_apns_jwt "$WORK/provider.pem" BENCHKEY01 BENCHTEAM1)"
TOKEN="$(openssl rand -hex 32)"
printf '{"aps":{"alert":{"title":"Hello","body":"A benchmark payload of a typical size for an alert push"},"badge":1,"sound":"default"},"custom":{"orderId":"c6f0d1f4-2a7e-4a57-9a43-0b1d5f6c2e11"}}' >"$WORK/payload.json"

# run_h2load NAME URL: prints requests/s (h2load: 4 connections x 100 concurrent streams)
run_h2load() {
  local out
  out="$(timeout 120 h2load -n "$REQUESTS" -c 4 -m 100 \
    -H "authorization: bearer $JWT" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" \
    -d "$WORK/payload.json" "$2")"
  echo "$out" >"$WORK/h2load-$1.txt"
  grep -E "^status codes" <<<"$out" >&2
  awk '/^finished in/ {print $4}' <<<"$out"
}

bk_log "starting apns-sim (--no-record, 2 threads)"
"$SIM" --port 0 --control-port 0 --cert "$WORK/certs/cert.pem" --key "$WORK/certs/key.pem" \
  --key "BENCHKEY01=BENCHTEAM1:$WORK/provider.pub.pem" --no-record --threads 2 >"$WORK/sim.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q 'listening on' "$WORK/sim.out" && break; sleep 0.1; done
PORT="$(sed -nE 's/.*listening on [^:]+:([0-9]+) control.*/\1/p' "$WORK/sim.out")"
[ -n "$PORT" ] || bk_die "apns-sim did not start: $(cat "$WORK/sim.out")"
CONTROL="$(sed -nE 's/.* control [^:]+:([0-9]+).*/\1/p' "$WORK/sim.out")"

# Warm-up, then the measured run; every response must be 200.
h2load -n 2000 -c 4 -m 100 -H "authorization: bearer $JWT" -H "apns-topic: com.example.bench" \
  -d "$WORK/payload.json" "https://127.0.0.1:$PORT/3/device/$TOKEN" >/dev/null
SIM_RPS="$(run_h2load sim "https://127.0.0.1:$PORT/3/device/$TOKEN")"
curl -s "http://127.0.0.1:$CONTROL/control/stats" >"$WORK/stats.json"
grep -q '"rejectedTotal":0' "$WORK/stats.json" || bk_log "warning: some requests were rejected: $(cat "$WORK/stats.json")"
kill "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null || true; PIDS=()

BASE_RPS="n/a"
if command -v nghttpd >/dev/null; then
  bk_log "starting nghttpd baseline (2 workers, static 0-byte file)"
  mkdir -p "$WORK/docroot/3/device"; : >"$WORK/docroot/3/device/$TOKEN"
  BPORT="$(bk_free_port)"
  nghttpd -n 2 -d "$WORK/docroot" "$BPORT" "$WORK/certs/key.pem" "$WORK/certs/cert.pem" >/dev/null 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$BPORT") 2>/dev/null && break; sleep 0.1; done
  BASE_RPS="$(run_h2load nghttpd "https://127.0.0.1:$BPORT/3/device/$TOKEN")"
fi

echo "apns-sim (ES256 token, full validation, no recording): $SIM_RPS requests/s"
echo "nghttpd raw baseline (same h2load, same headers/payload): $BASE_RPS requests/s"
if [ "$BASE_RPS" != "n/a" ]; then
  awk -v a="$SIM_RPS" -v b="$BASE_RPS" 'BEGIN { printf "ratio apns-sim / nghttpd: %.2f\n", a / b }'
fi
