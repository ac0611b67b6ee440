# Shared pieces of the benchmark scripts. Sourced, never run.

# bench_apns_jwt KEY.pem KEY_ID TEAM_ID: prints an APNs provider token (ES256 JWT) signed with
# openssl alone: sign the header and claims, then turn the DER signature into raw r || s.
bench_apns_jwt() {
  local key="$1" kid="$2" team="$3" dir header claims sig
  dir="$(mktemp -d)"
  b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
  header="$(printf '{"alg":"ES256","kid":"%s"}' "$kid" | b64url)"
  claims="$(printf '{"iss":"%s","iat":%d}' "$team" "$(date +%s)" | b64url)"
  printf '%s.%s' "$header" "$claims" >"$dir/signing-input"
  openssl dgst -sha256 -sign "$key" -out "$dir/sig.der" "$dir/signing-input"
  sig="$(python3 - "$dir/sig.der" <<'PY' | b64url
import sys
der = open(sys.argv[1], "rb").read()
# SEQUENCE { INTEGER r, INTEGER s }
i = 2 if der[1] < 0x80 else 3
out = b""
for _ in range(2):
    assert der[i] == 0x02
    n = der[i + 1]
    out += der[i + 2:i + 2 + n].lstrip(b"\x00").rjust(32, b"\x00")
    i += 2 + n
sys.stdout.buffer.write(out)
PY
)"
  rm -rf "$dir"
  printf '%s.%s.%s' "$header" "$claims" "$sig"
}

# bench_release_build SCRATCH PRODUCT...: builds the products in release mode into the scratch
# folder, showing the build log when it fails, and prints the folder holding the binaries.
bench_release_build() {
  local scratch="$1" product log
  shift
  log="$(mktemp)"
  for product in "$@"; do
    swift build -c release --product "$product" --scratch-path "$scratch" >"$log" 2>&1 \
      || { tail -30 "$log" >&2; rm -f "$log"; bk_die "release build of $product failed"; }
  done
  rm -f "$log"
  swift build -c release --show-bin-path --scratch-path "$scratch"
}

# bench_bootstrap_stack PGPORT REDISPORT: what every bench stack starts from, in $WORK with the
# release binaries in $BIN: a throwaway PostgreSQL and Redis on those ports, the BUZZKIT_* settings
# exported, the schema migrated, the simulator's TLS certificates and an APNs provider key (the
# simulator checks tokens against $WORK/provider.pub.pem), and a workspace with a demo tenant whose
# credentials (BUZZKIT_TENANT, BUZZKIT_TENANT_KEY, ...) are sourced into the shell. Sets PSQL (array).
bench_bootstrap_stack() {
  local pgport="$1" redisport="$2"
  bk_start_postgres "$WORK/pg" "$pgport"
  bk_start_redis "$WORK/redis" "$redisport"
  export BUZZKIT_DATABASE_URL="postgres://buzzkit@127.0.0.1:$pgport/buzzkit"
  export BUZZKIT_REDIS_URL="redis://127.0.0.1:$redisport"
  export BUZZKIT_SECRET_KEY="$(openssl rand -base64 32)"
  export BUZZKIT_LOG_LEVEL=warning
  PSQL=(psql -h 127.0.0.1 -p "$pgport" -U buzzkit -d buzzkit -v ON_ERROR_STOP=1 -qtA)
  "$BIN/buzzkit-admin" migrate
  Tools/apns-sim/make-certs.sh "$WORK/certs" >/dev/null
  openssl ecparam -name prime256v1 -genkey -noout -out "$WORK/provider.ec.pem" 2>/dev/null
  openssl pkcs8 -topk8 -nocrypt -in "$WORK/provider.ec.pem" -out "$WORK/provider.p8"
  openssl pkey -in "$WORK/provider.p8" -pubout -out "$WORK/provider.pub.pem"
  "$BIN/buzzkit-admin" bootstrap --workspace bench --demo-tenant bench --apns-team-id BENCHTEAM1 \
    --apns-key-id BENCHKEY01 --apns-key-file "$WORK/provider.p8" --bundle-id com.example.bench \
    --environment sandbox >"$WORK/bootstrap.env"
  # shellcheck disable=SC1091
  source "$WORK/bootstrap.env"
}

# bench_seed_topic DEVICES: the fan-out benchmarks' audience, through PSQL (after
# bench_bootstrap_stack): DEVICES subscribers u0000001..., one sandbox device each, all in the
# topic 'everyone'; then ANALYZE.
bench_seed_topic() {
  local devices="$1"
  "${PSQL[@]}" <<SQL
INSERT INTO subscribers (tenant_id, id) SELECT '$BUZZKIT_TENANT', 'u' || lpad(n::text, 7, '0') FROM generate_series(1, $devices) n;
INSERT INTO devices (tenant_id, token, subscriber_id, environment)
  SELECT '$BUZZKIT_TENANT', encode(sha256(n::text::bytea), 'hex'), 'u' || lpad(n::text, 7, '0'), 'sandbox' FROM generate_series(1, $devices) n;
INSERT INTO topics (tenant_id, key) VALUES ('$BUZZKIT_TENANT', 'everyone');
INSERT INTO topic_subscriptions (tenant_id, topic_key, subscriber_id)
  SELECT '$BUZZKIT_TENANT', 'everyone', 'u' || lpad(n::text, 7, '0') FROM generate_series(1, $devices) n;
ANALYZE;
SQL
}

# bench_migrated_databases DIR: a throwaway PostgreSQL (schema migrated with psql, no service
# binary needed) and Redis in DIR on free ports, for the benchmarks that run a service's built-in
# measurement. Sets PG_URL and REDIS_URL.
bench_migrated_databases() {
  local dir="$1" pgport redisport f
  pgport="$(bk_free_port)"; redisport="$(bk_free_port)"
  bk_start_postgres "$dir/pg" "$pgport"
  bk_start_redis "$dir/redis" "$redisport"
  PG_URL="postgres://buzzkit@127.0.0.1:$pgport/buzzkit"
  REDIS_URL="redis://127.0.0.1:$redisport"
  for f in Shared/Migrations/SQL/[0-9]*.sql; do
    "$(bk_pg_bindir)/psql" -q -v ON_ERROR_STOP=1 "$PG_URL" -f "$f" >/dev/null
  done
}

# bench_stop_pids: ends every process listed in the PIDS array and waits for each.
bench_stop_pids() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}

# bench_thread_ticks PID PREFIX: the CPU ticks of each of PID's threads whose name starts with
# PREFIX, comma-separated (e.g. libmicrohttpd's "MHD-"); read before and after a run, it shows how
# evenly the threads shared the work.
bench_thread_ticks() {
  local pid="$1" prefix="$2" task out=""
  for task in /proc/"$pid"/task/*; do
    [[ "$(cat "$task/comm" 2>/dev/null)" == "$prefix"* ]] || continue
    out="$out,$(awk '{print $14 + $15}' "$task/stat" 2>/dev/null || echo 0)"
  done
  echo "${out#,}"
}

# bench_ticks PID...: CPU ticks (1/100 s, user + system) the processes have used so far; read
# before and after a run, the difference says where the machine's two cores went.
bench_ticks() {
  local total=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] || continue
    total=$(( total + $(awk '{print $14 + $15}' "/proc/$p/stat") ))
  done
  echo "$total"
}

# bench_pg_pids DATADIR: the postmaster of the cluster in DATADIR and all its children.
bench_pg_pids() {
  local pm
  pm="$(head -1 "$1/postmaster.pid")"
  echo "$pm $(pgrep -P "$pm" | tr '\n' ' ')"
}

# bench_machine_ticks: CPU ticks all cores have spent busy (not idle or waiting on I/O) so far.
bench_machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }

# bench_h2load_ceiling SIMPORT KEY.pem KEY_ID TEAM_ID [REQUESTS]: the simulator's ceiling in the
# same run: h2load (nghttp2's own load client, 4 connections x 100 streams, a real ES256 token on
# every request, a typical alert payload) against the running simulator. Prints one line:
# "RPS CLIENT_US": requests/s, and h2load's own CPU (user + system) per request in microseconds,
# the cost of an HTTP/2 + TLS client written in C on nghttp2 (the floor for ours). Status codes go
# to stderr.
bench_h2load_ceiling() {
  local port="$1" key="$2" kid="$3" team="$4" requests="${5:-200000}" jwt token dir cpu TIMEFORMAT
  command -v h2load >/dev/null || bk_die "h2load missing (apt-get install nghttp2-client)"
  jwt="$(bench_apns_jwt "$key" "$kid" "$team")"
  token="$(openssl rand -hex 32)"
  dir="$(mktemp -d)"
  printf '{"aps":{"alert":{"title":"Hello","body":"A benchmark push to everyone"}},"bk":{"id":"00000000-0000-0000-0000-000000000000","data":{"k":1}}}' >"$dir/payload.json"
  TIMEFORMAT='%U %S'
  { time timeout 120 h2load -n "$requests" -c 4 -m 100 -H "authorization: bearer $jwt" \
      -H "apns-topic: com.example.bench" -H "apns-push-type: alert" -d "$dir/payload.json" \
      "https://127.0.0.1:$port/3/device/$token" >"$dir/out.txt"; } 2>"$dir/time.txt"
  grep -E "^status codes" "$dir/out.txt" >&2
  cpu="$(tail -1 "$dir/time.txt")"
  awk -v n="$requests" -v cpu="$cpu" '/^finished in/ { split(cpu, t, " "); gsub(",", "", $4);
    printf "%d %.2f\n", $4, (t[1] + t[2]) / n * 1e6 }' "$dir/out.txt"
  rm -rf "$dir"
}

# bench_go_apns_ceiling SIMPORT KEY.pem KEY_ID TEAM_ID [PUSHES]: issue 29's raw Go client in the same
# run: bench/baseline/apns_go (net/http's HTTP/2 client as Go's apns2 and gorush use it, one cached
# provider token, every push to its own device token, 400 concurrent requests) against the running
# simulator. Installs Debian's golang-go when missing; builds offline (the client needs only Go's
# standard library; once per $WORK). Prints "PUSHES_PER_SECOND CLIENT_US ACCEPTED": its rate (first
# request to last answer), its own CPU (user + system) per push in microseconds, and how many the
# simulator accepted.
bench_go_apns_ceiling() {
  local port="$1" key="$2" kid="$3" team="$4" pushes="${5:-200000}" jwt bin
  if ! command -v go >/dev/null; then
    [ "$(id -u)" = 0 ] || bk_die "go missing (apt-get install golang-go)"
    bk_log "installing golang-go for the raw Go client baseline"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null \
      || { apt-get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null; }
  fi
  bin="$WORK/apnsgo"
  [ -x "$bin" ] || (cd "$BK_ROOT/bench/baseline/apns_go" && GOCACHE="${TMPDIR:-/tmp}/bk-gocache" GOPATH="$WORK/gopath" \
    GOPROXY=off GOFLAGS=-mod=mod go build -o "$bin" .) || bk_die "building the raw Go client failed"
  jwt="$(bench_apns_jwt "$key" "$kid" "$team")"
  timeout 180 "$bin" -url "https://127.0.0.1:$port" -jwt "$jwt" -topic com.example.bench -n "$pushes" -c 400
}

# bench_wait_quiet [SECONDS]: waits (at most SECONDS, default 20) until both cores were less than
# 10% busy for half a second (Postgres's autovacuum of the last round's rows, its checkpointer and
# WAL writer, a service winding down), so a measurement does not start on a machine still busy
# with the one before. Prints how long it waited to stderr when it had to.
bench_wait_quiet() {
  local limit="${1:-20}" start a b waited
  start="$(date +%s.%N)"
  while :; do
    a="$(bench_machine_ticks)"; sleep 0.5; b="$(bench_machine_ticks)"
    [ $(( b - a )) -lt 10 ] && break
    waited="$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')"
    awk -v w="$waited" -v l="$limit" 'BEGIN { exit !(w >= l) }' && break
  done
  waited="$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')"
  [ "$waited" = 0.5 ] || echo "waited ${waited} s for a quiet machine" >&2
}

# bench_load_note: the machine's load average and how busy both cores were in the last second, for
# the figures' context (other builds share this machine).
bench_load_note() {
  local a b
  a="$(bench_machine_ticks)"; sleep 1; b="$(bench_machine_ticks)"
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg), both cores $(( (b - a) / 2 ))% busy"
}
