"""The container stack the tests share, and the ways they talk to it.

Everything goes through what an operator has: ./deploy/containers (and its `compose` passthrough to
docker-compose), docker itself, the published loopback ports written to containers.env, the APNs
simulator's control API and psql. Tests run in file order on one stack (pytest -x stops at the
first failure: each test builds on the stack the previous one left).
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(os.environ.get("BK_ROOT", Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(ROOT / "deploy" / "lib"))
import push_verdict  # noqa: E402
CONTAINERS = str(ROOT / "deploy" / "containers")


def log(message):
    print(f"[container tests] {message}", flush=True)


def run(args, timeout=1800, check=True, capture=True):
    result = subprocess.run(args, cwd=ROOT, text=True, timeout=timeout,
                            stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {result.returncode}:\n{(result.stdout or '')[-4000:]}")
    return result


def read_env(path):
    values = {}
    for line in Path(path).read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            values[key] = value
    return values


class Stack:
    """The running stack: its settings (containers.env) and helpers over them."""

    def __init__(self):
        self.env = read_env(os.environ["BUZZKIT_CONTAINERS_ENV"])
        self.http = httpx.Client(timeout=30)

    def reload(self):
        self.env = read_env(os.environ["BUZZKIT_CONTAINERS_ENV"])

    # docker-compose and docker
    def compose(self, *args, check=True, timeout=600):
        return run([CONTAINERS, "compose", *args], check=check, timeout=timeout)

    def containers(self, service):
        out = self.compose("ps", "-q", service).stdout.split()
        return [c for c in out if c]

    def docker(self, *args, check=True):
        docker = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"
        return run([docker, *args], check=check)

    # Postgres through the published port
    def psql(self, sql):
        return run(["psql", self.env["BUZZKIT_DATABASE_URL"], "-v", "ON_ERROR_STOP=1", "-qtAc", sql]).stdout.strip()

    def psql_rows(self, sql):
        out = self.psql(sql)
        return [line.split("|") for line in out.splitlines() if line]

    # The API as the demo tenant
    def api(self, method, path, body=None, key="BUZZKIT_TENANT_KEY", expect=(200, 201, 202)):
        response = self.http.request(method, self.env["BUZZKIT_URL"] + path, json=body,
                                     headers={"Authorization": f"Bearer {self.env[key]}"})
        assert response.status_code in expect, f"{method} {path}: {response.status_code} {response.text[:500]}"
        return response.json()

    # The simulator's control API
    def sim(self, method, path, body=None):
        response = self.http.request(method, self.env["BUZZKIT_APNS_SIM_CONTROL_URL"] + path,
                                     content=json.dumps(body) if body is not None else None)
        assert response.status_code == 200, f"simulator {path}: {response.status_code} {response.text[:300]}"
        return response.json() if response.content else None

    def sim_accepted(self):
        return self.sim("GET", "/control/stats")["accepted"]

    def eventually(self, condition, limit, what, interval=0.2):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(interval)
        raise AssertionError(f"timed out after {limit} s waiting for {what}")

    # Audiences and verdicts
    def seed_topic(self, prefix, count, topic):
        """COUNT subscribers PREFIX0000001... with one sandbox device each, all in TOPIC; returns the tokens."""
        tenant = self.env["BUZZKIT_TENANT"]
        self.psql(f"""
            INSERT INTO subscribers (tenant_id, id)
              SELECT '{tenant}', '{prefix}' || lpad(n::text, 7, '0') FROM generate_series(1, {count}) n;
            INSERT INTO devices (tenant_id, token, subscriber_id, environment)
              SELECT '{tenant}', encode(sha256(('{prefix}' || n)::bytea), 'hex'), '{prefix}' || lpad(n::text, 7, '0'), 'sandbox'
              FROM generate_series(1, {count}) n;
            INSERT INTO topics (tenant_id, key) VALUES ('{tenant}', '{topic}');
            INSERT INTO topic_subscriptions (tenant_id, topic_key, subscriber_id)
              SELECT '{tenant}', '{topic}', '{prefix}' || lpad(n::text, 7, '0') FROM generate_series(1, {count}) n;
            ANALYZE;""")
        return [row[0] for row in self.psql_rows(
            f"SELECT token FROM devices WHERE tenant_id = '{tenant}' AND subscriber_id LIKE '{prefix}%'")]

    def wait_ended(self, message_id, count, limit=300):
        """Waits until COUNT deliveries of the message are past queued/sending."""
        def ended():
            done = int(self.psql(f"SELECT count(*) FROM deliveries WHERE message_id = '{message_id}' "
                                 "AND status NOT IN ('queued', 'sending')") or 0)
            return done >= count
        self.eventually(ended, limit, f"{count} deliveries of {message_id} to end", interval=1)

    def verdict(self, message_id, tokens):
        """missing, doubled and disagree (deploy/lib/push_verdict.py) for the message sent to TOKENS."""
        time.sleep(1)  # answers on their way back to a sender were recorded by the simulator already
        pushes = self.sim("GET", f"/control/pushes?limit={3 * len(tokens) + 1000}")
        ledger = self.psql_rows(f"SELECT device_token, status, coalesce(apns_id::text, id::text) FROM deliveries "
                                f"WHERE message_id = '{message_id}'")
        return push_verdict.judge(tokens, pushes, ledger)


@pytest.fixture(scope="session")
def stack():
    log("from a clean state: ./deploy/containers down --volumes, then up")
    run([CONTAINERS, "down", "--volumes"], capture=False)
    started = time.monotonic()
    run([CONTAINERS, "up"], capture=False, timeout=3600)
    log(f"./deploy/containers up took {time.monotonic() - started:.0f} s")
    return Stack()
