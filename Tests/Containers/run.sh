#!/usr/bin/env bash
# Tests/Containers/run.sh [pytest args]: the compose deployment run for real (./deploy/containers
# on a stack of its own: project bktest, state in $BUZZKIT_CONTAINERS_STATE or a temporary folder), then
# tests that break it the way an operator would (test_containers.py). Always ends with
# `./deploy/containers down --volumes` for that stack, which also stops dockerd if the run started
# it. Skips (exit 0, saying why) only when no Docker daemon can run on this machine.
#   BK_VENV  the Python venv with pytest and httpx (./deploy/test passes its own)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
source "$ROOT/deploy/lib/common.sh"
VENV="${BK_VENV:-$ROOT/.buzzkit/venv}"
WORK="$(mktemp -d "${TEST_RUN_DIR:-/tmp}/containers.XXXXXX")"
export BUZZKIT_CONTAINERS_PROJECT=bktest
# ./deploy/test passes the folder it prepared Docker in (a dockerd it started is remembered there).
export BUZZKIT_CONTAINERS_STATE="${BUZZKIT_CONTAINERS_STATE:-$WORK/state}"
export BUZZKIT_CONTAINERS_ENV="$WORK/containers.env"
export BUZZKIT_CONTAINERS_ENV_FILE="$HERE/services.env"
BK_CT_STATE="$BUZZKIT_CONTAINERS_STATE"
source "$ROOT/deploy/lib/containers.sh"

log() { printf '[container tests] %s\n' "$*" >&2; }

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  log "stopping the test stack (down --volumes)"
  "$ROOT/deploy/containers" down --volumes >&2 || rc=1
  rm -rf "$WORK"
  exit "$rc"
}

# Docker must start here; where it cannot (no root, no cgroups, no kernel support), say why and skip.
if ! (bk_docker_ready) 2>"$WORK/docker-start.log"; then
  log "SKIPPED: Docker cannot start on this machine: $(grep -v '^\s*$' "$WORK/docker-start.log" | tail -3 | tr '\n' ' ')"
  bk_docker_stop_ours
  rm -rf "$WORK"
  exit 0
fi
trap cleanup EXIT
trap 'exit 130' INT TERM

"$VENV/bin/python" -c 'import pytest, httpx' 2>/dev/null || bk_die "the venv $VENV lacks pytest or httpx (bk_python_venv)"
set +e
BK_ROOT="$ROOT" "$VENV/bin/python" -m pytest -p no:cacheprovider -q -x "$HERE" "$@"
RC=$?
set -e
exit "$RC"
