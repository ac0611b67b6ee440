#!/usr/bin/env bash
# Tools/apns-sim/tests/run.sh [pytest args]: builds the APNs simulator, starts it on free ports
# with fresh certificates and a fresh provider key, runs the pytest suite against it, and always
# stops it. Exits non-zero on any failure.
#   BK_VENV             Python venv to use (default /work/main/.buzzkit/venv-sim, i.e. <repo>/.buzzkit/venv-sim)
#   SWIFT_SCRATCH_PATH  SwiftPM build folder (default .build)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
VENV="${BK_VENV:-$ROOT/.buzzkit/venv-sim}"
SCRATCH="${SWIFT_SCRATCH_PATH:-$ROOT/.build}"

log() { printf '[apns-sim tests] %s\n' "$*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv $VENV"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -c 'import h2, httpx, cryptography, pytest' 2>/dev/null \
  || "$VENV/bin/pip" install -q --disable-pip-version-check 'httpx[http2]' h2 cryptography pytest >/dev/null

log "building apns-sim"
(cd "$ROOT" && swift build --scratch-path "$SCRATCH" --product apns-sim >/dev/null)
BIN="$(cd "$ROOT" && swift build --scratch-path "$SCRATCH" --show-bin-path)/apns-sim"

WORK="$(mktemp -d /tmp/apns-sim-test.XXXXXX)"
SIM_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$SIM_PID" ] && kill -0 "$SIM_PID" 2>/dev/null; then
    kill -TERM "$SIM_PID" 2>/dev/null || true
    wait "$SIM_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$HERE/../make-certs.sh" "$WORK/certs"
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$WORK/provider.p8"
openssl pkey -in "$WORK/provider.p8" -pubout -out "$WORK/provider.pub.pem" 2>/dev/null
KID="CLIKEY$RANDOM"
TEAM="CLITEAM$RANDOM"

# Port 0: the simulator picks free ports and prints them on its ready line.
"$BIN" --port 0 --control-port 0 --cert "$WORK/certs/cert.pem" --key "$WORK/certs/key.pem" \
  --key "$KID=$TEAM:$WORK/provider.pub.pem" --threads 2 >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM_PID=$!
for _ in $(seq 1 100); do
  grep -q 'listening on' "$WORK/sim.out" 2>/dev/null && break
  kill -0 "$SIM_PID" 2>/dev/null || { cat "$WORK/sim.err" >&2; log "simulator exited"; exit 1; }
  sleep 0.1
done
READY="$(grep 'listening on' "$WORK/sim.out")" || { log "simulator not ready"; exit 1; }
log "$READY"
SIM_PORT="$(sed -E 's/.*listening on [^:]+:([0-9]+) control.*/\1/' <<<"$READY")"
SIM_CONTROL_PORT="$(sed -E 's/.* control [^:]+:([0-9]+).*/\1/' <<<"$READY")"

set +e
SIM_PORT="$SIM_PORT" SIM_CONTROL_PORT="$SIM_CONTROL_PORT" SIM_CA="$WORK/certs/ca.pem" \
  SIM_CLI_KEY="$WORK/provider.p8" SIM_CLI_KID="$KID" SIM_CLI_TEAM="$TEAM" \
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$HERE" "$@"
RC=$?
set -e

# The simulator must also stop cleanly on SIGTERM.
kill -TERM "$SIM_PID"
if wait "$SIM_PID"; then SIM_RC=0; else SIM_RC=$?; fi
SIM_PID=""
if [ "$SIM_RC" -ne 0 ]; then
  log "simulator exited with $SIM_RC on SIGTERM"; cat "$WORK/sim.err" >&2
  [ "$RC" -eq 0 ] && RC=1
fi
exit "$RC"
