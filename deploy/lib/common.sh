# Shared shell functions for deploy/local and deploy/test. Sourced, never run.
# Everything here works on a fresh Debian 12 machine as root, or as a normal user with the
# packages already installed.

BK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BK_PG_OS_USER="${BK_PG_OS_USER:-buzzkit}"   # Postgres refuses to run as root: it runs as this user.

bk_log() { printf '[buzzkit] %s\n' "$*" >&2; }
bk_die() { printf '[buzzkit] error: %s\n' "$*" >&2; exit 1; }

# The services, in start order: what ./deploy/local and ./deploy/containers run (a new service is
# added here, in deploy/docker-compose.yml and in deploy/kubernetes/; docs/containers.md).
BK_SERVICES=(gateway ingest workflow apns-sender liveactivity webhooks)

# The Debian packages the build, the tests and the local stack need (nodejs: the dashboard's
# JavaScript unit tests, Node's built-in test runner; docker.io, docker-compose and debootstrap:
# ./deploy/containers and its tests).
BK_APT_PACKAGES=(
  pkg-config libpq-dev libhiredis-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev libmicrohttpd-dev
  libnghttp2-dev postgresql-15 postgresql-client-15 redis-server curl openssl python3 python3-venv docker-compose
  nghttp2-server nghttp2-client chromium nodejs docker.io debootstrap
)

# Installs whatever of BK_APT_PACKAGES is missing (apt-get, as root).
bk_install_deps() {
  local missing=()
  local pkg
  for pkg in "${BK_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || bk_die "missing packages (${missing[*]}); install them or run as root"
    bk_log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # The Debian package starts a system-wide Redis on 6379 that BuzzKit never uses; leave it alone.
  command -v swift >/dev/null || bk_die "swift is not on PATH (expected Swift 6 at /opt/swift)"
}

# Debian's Node.js (the nodejs package installs /usr/bin/nodejs and /usr/bin/node); never one
# that happens to be first on PATH, which a CI machine may not have.
bk_node() {
  local bin
  for bin in /usr/bin/node /usr/bin/nodejs; do
    [ -x "$bin" ] && { echo "$bin"; return; }
  done
  bk_die "Node.js not found at /usr/bin/node (apt-get install nodejs)"
}

bk_pg_bindir() {
  local dir
  for dir in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return; }
  done
  bk_die "PostgreSQL server binaries not found (apt-get install postgresql-15)"
}

# A TCP port on 127.0.0.1 that nothing listens on right now.
bk_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Runs a command as the unprivileged Postgres user when we are root, directly otherwise.
bk_as_pg_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$BK_PG_OS_USER" -- "$@"; else "$@"; fi
}

bk_ensure_pg_user() {
  [ "$(id -u)" = 0 ] || return 0
  id -u "$BK_PG_OS_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$BK_PG_OS_USER"
}

# bk_start_postgres DIR PORT: creates a cluster in DIR/data on first use, starts it on 127.0.0.1:PORT
# with its socket in DIR, and creates the database `buzzkit`. Superuser `buzzkit`, trust auth on loopback.
bk_start_postgres() {
  local dir="$1" port="$2" bin
  bin="$(bk_pg_bindir)"
  bk_ensure_pg_user
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    chown "$BK_PG_OS_USER" "$dir"
    # The server runs as $BK_PG_OS_USER: it must be able to reach $dir (mktemp -d makes 0700 folders).
    chmod a+x "$(dirname "$dir")"
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    bk_as_pg_user "$bin/initdb" -D "$dir/data" -U buzzkit --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; bk_die "initdb failed"; }
  fi
  bk_as_pg_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=${BK_PG_MAX_CONNECTIONS:-200} -c fsync=${BK_PG_FSYNC:-on} -c synchronous_commit=${BK_PG_SYNC_COMMIT:-on} -c shared_buffers=256MB -c max_wal_size=${BK_PG_MAX_WAL_SIZE:-1GB} ${BK_PG_OPTIONS:-}" \
    start >/dev/null || { tail -20 "$dir/postgres.log" >&2; bk_die "postgres did not start"; }
  echo "$port" >"$dir/port"
  psql -h 127.0.0.1 -p "$port" -U buzzkit -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='buzzkit'" | grep -q 1 \
    || psql -h 127.0.0.1 -p "$port" -U buzzkit -d postgres -qc "CREATE DATABASE buzzkit" >/dev/null
}

bk_stop_postgres() {
  local dir="$1"
  [ -f "$dir/data/postmaster.pid" ] || return 0
  bk_as_pg_user "$(bk_pg_bindir)/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
}

# bk_start_redis DIR PORT: a Redis on 127.0.0.1:PORT with AOF persistence in DIR.
bk_start_redis() {
  local dir="$1" port="$2"
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --appendonly yes --appendfsync everysec \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save "" >/dev/null
  local i
  for i in $(seq 1 100); do
    redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG && { echo "$port" >"$dir/port"; return 0; }
    sleep 0.05
  done
  bk_die "redis did not start (see $dir/redis.log)"
}

bk_stop_redis() {
  local dir="$1" pid
  [ -f "$dir/redis.pid" ] || return 0
  pid="$(cat "$dir/redis.pid")"
  kill "$pid" 2>/dev/null || true
  local i
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/redis.pid"
}

# A Python virtualenv under .buzzkit/venv with the packages the offline checks use.
BK_VENV="$BK_ROOT/.buzzkit/venv"
# playwright drives Debian's chromium (its own browser download cannot run here) in the dashboard's browser tests;
# schemathesis (pinned: its checks change between releases) checks the API document against the real gateway;
# openapi-python-client (pinned: what it accepts changes between releases) generates the client GeneratedClientTests uses;
# standardwebhooks (pinned) verifies the webhooks service's signatures in the tests (a verifier we did not write);
# kubernetes-validate (pinned: it bundles the Kubernetes schemas, up to 1.37) checks deploy/kubernetes/.
BK_PY_PACKAGES=(dockerfile-parse pyyaml openapi-spec-validator 'httpx[http2]' h2 cryptography pytest playwright 'schemathesis==4.32.5'
  'openapi-python-client==0.29.1' 'standardwebhooks==1.1.0' 'kubernetes-validate==1.37.0')
bk_python_venv() {
  if [ ! -x "$BK_VENV/bin/python" ]; then
    mkdir -p "$BK_ROOT/.buzzkit"
    python3 -m venv "$BK_VENV" || bk_die "python3 -m venv failed"
  fi
  "$BK_VENV/bin/python" -c 'import dockerfile_parse, yaml, openapi_spec_validator, httpx, h2, cryptography, pytest, playwright, schemathesis, openapi_python_client, standardwebhooks
from importlib.metadata import version
assert schemathesis.__version__ == "4.32.5"
assert openapi_python_client.__version__ == "0.29.1" and version("standardwebhooks") == "1.1.0"
assert version("kubernetes-validate") == "1.37.0"' 2>/dev/null \
    || "$BK_VENV/bin/pip" install -q --disable-pip-version-check "${BK_PY_PACKAGES[@]}" >/dev/null \
    || bk_die "pip install ${BK_PY_PACKAGES[*]} failed"
}
