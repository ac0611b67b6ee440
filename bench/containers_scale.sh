#!/usr/bin/env bash
# Scale-out in containers: the same topic send to DEVICES devices (default 100,000) with 1, 2 and 4
# apns-sender containers of the compose stack (./deploy/containers, on a stack of its own, project
# bkbench), one after the other on one seeded database. Per run, printed:
#   deliveries/s     from the POST to the last ledger row of the message
#   CPU per delivery microseconds of each process's cgroup (each sender container, their sum,
#                    Postgres, Redis, the simulator, the gateway) per delivery, and the machine's
#   missing / doubled / disagree   deploy/lib/push_verdict.py (goal 0, 0, 0)
# The 1-sender run is the baseline of the same run: the 2- and 4-sender figures are also printed as
# ratios to it (on two cores the rate will not grow; CPU per delivery should not grow either).
# Usage: bench/containers_scale.sh [devices] [replica counts, default "1 2 4"]
# Knobs: BK_SCALE_KEEP=1 leaves the stack running at the end (./deploy/containers compose ... on
# BUZZKIT_CONTAINERS_PROJECT and _STATE printed); by default it is taken down with its data.
set -euo pipefail
source "$(dirname "$0")/../deploy/lib/common.sh"
source "$(dirname "$0")/lib.sh"
cd "$BK_ROOT"

DEVICES="${1:-100000}"
REPLICAS="${2:-1 2 4}"
WORK="$(mktemp -d /tmp/bk-containers-scale.XXXXXX)"
export BUZZKIT_CONTAINERS_PROJECT=bkbench
export BUZZKIT_CONTAINERS_STATE="$WORK/state"
export BUZZKIT_CONTAINERS_ENV="$WORK/containers.env"
export BUZZKIT_CONTAINERS_ENV_FILE="$WORK/services.env"
BK_CT_STATE="$BUZZKIT_CONTAINERS_STATE"
source "$BK_ROOT/deploy/lib/containers.sh"
cat >"$BUZZKIT_CONTAINERS_ENV_FILE" <<'EOF'
BUZZKIT_RATE_LIMIT_ENABLED=false
BUZZKIT_LOG_LEVEL=warning
BUZZKIT_DB_POOL_SIZE=8
EOF
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "${BK_SCALE_KEEP:-}" ]; then
    bk_log "left running: BUZZKIT_CONTAINERS_PROJECT=bkbench BUZZKIT_CONTAINERS_STATE=$BUZZKIT_CONTAINERS_STATE ./deploy/containers ..."
  else
    ./deploy/containers down --volumes >&2 || rc=1
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

./deploy/containers up
set -a; source "$BUZZKIT_CONTAINERS_ENV"; set +a
PSQL=(psql "$BUZZKIT_DATABASE_URL" -v ON_ERROR_STOP=1 -qtA)
SIM="$BUZZKIT_APNS_SIM_CONTROL_URL"
compose() { ./deploy/containers compose "$@"; }

bk_log "seeding a topic of $DEVICES devices"
bench_seed_topic "$DEVICES"
"${PSQL[@]}" -c "COPY (SELECT token FROM devices WHERE tenant_id = '$BUZZKIT_TENANT') TO STDOUT" >"$WORK/devices.txt"

# CPU nanoseconds a container has used so far, from its cgroup (v1 cpuacct or v2 cpu.stat).
container_cpu_ns() {
  local id="$1" file
  for file in "/sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage" "/sys/fs/cgroup/cpu,cpuacct/docker/$id/cpuacct.usage"; do
    [ -r "$file" ] && { cat "$file"; return; }
  done
  for file in "/sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat" "/sys/fs/cgroup/docker/$id/cpu.stat"; do
    [ -r "$file" ] && { awk '/^usage_usec/ {print $2 * 1000}' "$file"; return; }
  done
  bk_die "no cgroup CPU counter found for container $id"
}
full_ids() { local s; for s in "$@"; do compose ps -q "$s"; done | xargs -r "$(bk_docker_path)" inspect -f '{{ .Id }}'; }
# "name=ns" per process of interest: every sender container, then postgres, redis, apns-sim, gateway.
cpu_snapshot() {
  local id service n=0
  for id in $(full_ids apns-sender); do n=$((n + 1)); echo "sender$n=$(container_cpu_ns "$id")"; done
  for service in postgres redis apns-sim gateway; do
    echo "$service=$(container_cpu_ns "$(full_ids "$service")")"
  done
  echo "machine=$(( $(bench_machine_ticks) * 1000000000 / $(getconf CLK_TCK) ))"
}

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
for replicas in $REPLICAS; do
  bk_log "run with $replicas apns-sender container(s)"
  compose up -d --no-deps --scale "apns-sender=$replicas" apns-sender >/dev/null 2>&1
  for _ in $(seq 1 120); do
    healthy=0
    for id in $(compose ps -q apns-sender); do
      [ "$(bk_docker inspect -f '{{ .State.Health.Status }}' "$id")" = healthy ] && healthy=$((healthy + 1))
    done
    [ "$healthy" -eq "$replicas" ] && [ "$(compose ps -q apns-sender | wc -l)" -eq "$replicas" ] && break
    sleep 1
  done
  [ "$healthy" -eq "$replicas" ] || bk_die "$replicas sender containers did not become healthy"
  curl -sf -X POST "$SIM/control/reset" >/dev/null
  cpu_snapshot >"$WORK/cpu-before"
  T0="$(date +%s.%N)"
  reply="$(curl -sf -X POST "$BUZZKIT_URL/v1/messages" -H "Authorization: Bearer $BUZZKIT_TENANT_KEY" \
    -H 'Content-Type: application/json' -d "{\"topic\":\"everyone\",\"title\":\"Scale $replicas\",\"body\":\"A push\"}")" \
    || bk_die "POST /v1/messages failed"
  ID="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["id"])' "$reply")"
  deadline=$(( $(date +%s) + 900 ))
  until [ "$(curl -sf "$SIM/control/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["accepted"])')" -ge "$DEVICES" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || bk_die "the simulator never accepted $DEVICES pushes"
    sleep 0.2
  done
  until [ "$("${PSQL[@]}" -c "SELECT count(*) FROM deliveries WHERE message_id = '$ID' AND status NOT IN ('queued', 'sending')")" -ge "$DEVICES" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || bk_die "the ledger never recorded $DEVICES ended deliveries"
    sleep 0.5
  done
  cpu_snapshot >"$WORK/cpu-after"
  T1="$("${PSQL[@]}" -c "SELECT extract(epoch FROM max(updated_at)) FROM deliveries WHERE message_id = '$ID'")"
  sleep 1
  curl -sf "$SIM/control/pushes?limit=$(( 3 * DEVICES ))" >"$WORK/pushes.json"
  "${PSQL[@]}" -c "COPY (SELECT device_token, status, coalesce(apns_id, id) FROM deliveries WHERE message_id = '$ID') TO STDOUT" >"$WORK/ledger.tsv"
  python3 deploy/lib/push_verdict.py "$WORK/devices.txt" "$WORK/pushes.json" "$WORK/ledger.tsv" >"$WORK/verdict.json"
  python3 - "$replicas" "$DEVICES" "$T0" "$T1" "$WORK/cpu-before" "$WORK/cpu-after" "$WORK/verdict.json" >>"$RESULTS" <<'PY'
import json, sys
replicas, n, t0, t1 = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
def read(path):
    return dict((k, int(v)) for k, v in (line.strip().split("=") for line in open(path) if line.strip()))
before, after = read(sys.argv[5]), read(sys.argv[6])
us = {k: (after[k] - before.get(k, 0)) / 1000 / n for k in after}
senders = {k: v for k, v in us.items() if k.startswith("sender")}
print(json.dumps({"replicas": replicas, "rate": n / (t1 - t0), "senders": senders,
                  "senderTotal": sum(senders.values()), "postgres": us["postgres"], "redis": us["redis"],
                  "sim": us["apns-sim"], "gateway": us["gateway"], "machine": us["machine"],
                  "verdict": json.load(open(sys.argv[7]))}))
PY
  tail -1 "$RESULTS" >&2
done

python3 - "$RESULTS" "$DEVICES" <<'PY'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
base = runs[0]
print(f"topic send to {int(sys.argv[2]):,} devices, apns-sender containers scaled out (CPU in us per delivery)")
for run in runs:
    v = run["verdict"]
    per = ", ".join(f"{value:.0f}" for value in run["senders"].values())
    print(f"{run['replicas']} sender(s): {run['rate']:,.0f} deliveries/s; CPU per delivery: senders {run['senderTotal']:.0f} "
          f"({per}), postgres {run['postgres']:.0f}, redis {run['redis']:.0f}, apns-sim {run['sim']:.0f}, "
          f"gateway {run['gateway']:.0f}, machine {run['machine']:.0f}; missing {v['missing']}, doubled {v['doubled']}, "
          f"disagree {v['disagree']}")
for run in runs[1:]:
    print(f"{run['replicas']} vs {base['replicas']} sender(s): rate x{run['rate'] / base['rate']:.2f}, "
          f"sender CPU per delivery x{run['senderTotal'] / base['senderTotal']:.2f}, "
          f"machine CPU per delivery x{run['machine'] / base['machine']:.2f}")
bad = [r for r in runs if (r["verdict"]["missing"], r["verdict"]["doubled"], r["verdict"]["disagree"]) != (0, 0, 0)]
sys.exit(1 if bad else 0)
PY
