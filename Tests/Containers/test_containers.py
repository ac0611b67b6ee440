"""The compose deployment run for real, and broken the way an operator would break it.

In file order, on one stack (conftest.py): up from a clean state and one send end to end; the
sender scaled out to four containers during a 10,000-device send and one of them killed half-way;
Postgres and Redis restarted mid-send; down then up with everything kept.
"""
import json
import os
import re
import time
import uuid

from conftest import CONTAINERS, log, run

DEVICES = 10_000
# Answer delay of the simulator while the big sends run: pushes stay in flight long enough for a
# scale-out, a kill or a restart to land in the middle of the send.
DELAY_MS = 3000


def test_up_then_a_send_reaches_the_simulator_container_and_the_ledger(stack):
    env = stack.env
    # containers.env carries the keys of local.env.
    for key in ["BUZZKIT_URL", "BUZZKIT_DASHBOARD_URL", "BUZZKIT_GATEWAY_URL", "BUZZKIT_INGEST_URL",
                "BUZZKIT_WORKFLOW_URL", "BUZZKIT_APNS_SENDER_URL", "BUZZKIT_LIVEACTIVITY_URL",
                "BUZZKIT_DATABASE_URL", "BUZZKIT_REDIS_URL", "BUZZKIT_APNS_SIM_URL", "BUZZKIT_APNS_SIM_CONTROL_URL",
                "BUZZKIT_WORKSPACE", "BUZZKIT_WORKSPACE_KEY", "BUZZKIT_TENANT", "BUZZKIT_TENANT_KEY"]:
        assert env.get(key), f"containers.env has no {key}"

    # The image: non-root, a healthcheck of its own, and every service container healthy.
    image = json.loads(stack.docker("image", "inspect", "-f", "{{ json . }}", "buzzkit:latest").stdout)
    user, healthcheck, size = image["Config"]["User"], json.dumps(image["Config"]["Healthcheck"]), image["Size"]
    assert user == "10001:10001"
    assert "readyz" in healthcheck
    log(f"buzzkit:latest is {int(size) / 1e6:.0f} MB")
    for service in ["gateway", "ingest", "workflow", "apns-sender", "liveactivity", "webhooks", "apns-sim"]:
        containers = stack.containers(service)
        assert containers, f"no {service} container"
        for container in containers:
            state = stack.docker("inspect", "-f", "{{ .State.Health.Status }} {{ .Config.User }}", container).stdout.split()
            assert state == ["healthy", "10001:10001"], f"{service} {container}: {state}"
    assert stack.compose("exec", "-T", "gateway", "id", "-u").stdout.strip() == "10001"

    # One subscriber with a device (its time zone read from the image's tzdata), one message.
    token = uuid.uuid4().hex + uuid.uuid4().hex
    stack.api("PUT", "/v1/subscribers/alice", {"timezone": "Europe/Berlin", "attributes": {"plan": "pro"}})
    stack.api("PUT", f"/v1/subscribers/alice/devices/{token}", {"environment": "sandbox", "bundleId": "dev.buzzkit.demo"})
    sent = stack.api("POST", "/v1/messages", {"to": "alice", "title": "Hello", "body": "From the containers",
                                              "collapseId": "hello"})
    message_id = sent["data"]["id"]

    pushes = stack.eventually(lambda: stack.sim("GET", f"/control/pushes?token={token}"), 60,
                              "the simulator container to accept the push")
    assert len(pushes) == 1
    push = pushes[0]
    assert push["collapseId"] == "hello"

    def delivered():
        rows = stack.api("GET", f"/v1/messages/{message_id}/deliveries")["data"]
        return rows if rows and all(row["status"] == "sent" for row in rows) else None
    rows = stack.eventually(delivered, 60, "the delivery to be sent in the ledger")
    assert len(rows) == 1
    ledger = stack.psql_rows(f"SELECT status, coalesce(apns_id::text, id::text) FROM deliveries WHERE message_id = '{message_id}'")
    assert ledger == [["sent", push["apnsId"].lower()]], ledger

    # The dashboard answers, with its script.
    page = stack.http.get(env["BUZZKIT_DASHBOARD_URL"])
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for script in re.findall(r'<script[^>]+src="([^"]+)"', page.text):
        url = script if script.startswith("http") else env["BUZZKIT_URL"] + (script if script.startswith("/") else "/dashboard/" + script)
        assert stack.http.get(url).status_code == 200, url

    # Every consumer's /metrics carries its groups' lag.
    metrics = stack.http.get(env["BUZZKIT_APNS_SENDER_URL"] + "/metrics").text
    assert 'bk_stream_lag{stream="bk:deliveries",group="apns-sender"} 0' in metrics
    assert 'bk_stream_pending{stream="bk:messages",group="apns-fanout"}' in metrics


def test_four_senders_and_one_killed_half_way_miss_nothing_and_double_nothing(stack):
    tokens = stack.seed_topic("k", DEVICES, "kill")
    stack.sim("POST", "/control/reset")
    stack.sim("POST", "/control/delay", {"ms": DELAY_MS})
    message_id = stack.api("POST", "/v1/messages", {"topic": "kill", "title": "Scale", "body": "and kill"})["data"]["id"]

    # Scale out while the send runs: two more senders join the group and take chunks.
    before = set(stack.containers("apns-sender"))
    stack.compose("up", "-d", "--no-deps", "--no-recreate", "--scale", "apns-sender=4", "apns-sender")
    senders = stack.containers("apns-sender")
    assert len(senders) == 4, senders
    joined = [c for c in senders if c not in before]
    stack.eventually(lambda: all(stack.docker("inspect", "-f", "{{ .State.Health.Status }}", c).stdout.strip() == "healthy"
                                 for c in senders), 120, "four healthy senders")

    accepted = stack.eventually(lambda: (lambda n: n if n >= DEVICES // 2 else None)(stack.sim_accepted()), 300,
                                "the simulator to accept half the devices", interval=0.05)
    victim = senders[0]
    stack.docker("kill", "-s", "KILL", victim)
    log(f"killed {victim[:12]} with {accepted} of {DEVICES} pushes accepted")
    assert accepted < DEVICES, "the send was over before the kill"

    stack.sim("POST", "/control/delay", {"ms": 0})
    stack.wait_ended(message_id, DEVICES)
    figures = stack.verdict(message_id, tokens)
    log(f"scale to 4, kill one half-way: {figures}")
    assert figures["deliveries"] == DEVICES
    assert (figures["missing"], figures["doubled"], figures["disagree"]) == (0, 0, 0), figures
    # The senders that joined mid-send took part of it.
    for container in joined:
        if container == victim:
            continue
        port = stack.docker("port", container, "8080").stdout.split(":")[-1].strip()
        metrics = stack.http.get(f"http://127.0.0.1:{port}/metrics").text
        sent = sum(float(v) for v in re.findall(r'^bk_sender_deliveries_total(?:\{[^}]*\})? (\S+)', metrics, re.M))
        assert sent > 0, f"sender {container[:12]} that joined mid-send sent nothing"

    # Back to two senders (the killed one is gone; compose removes the surplus).
    stack.compose("up", "-d", "--no-deps", "--scale", "apns-sender=2", "apns-sender")


def test_postgres_and_redis_restarts_mid_send_miss_nothing_and_double_nothing(stack):
    tokens = [row[0] for row in stack.psql_rows(
        f"SELECT token FROM devices WHERE tenant_id = '{stack.env['BUZZKIT_TENANT']}' AND subscriber_id LIKE 'k%'")]
    assert len(tokens) == DEVICES
    stack.sim("POST", "/control/reset")
    stack.sim("POST", "/control/delay", {"ms": DELAY_MS})
    message_id = stack.api("POST", "/v1/messages", {"topic": "kill", "title": "Restarts", "body": "mid-send"})["data"]["id"]

    stack.eventually(lambda: stack.sim_accepted() >= DEVICES // 4, 300, "a quarter of the send", interval=0.05)
    log(f"restarting postgres at {stack.sim_accepted()} accepted")
    stack.compose("restart", "postgres")
    stack.eventually(lambda: stack.sim_accepted() >= DEVICES // 2, 300, "half of the send", interval=0.05)
    log(f"restarting redis at {stack.sim_accepted()} accepted")
    stack.compose("restart", "redis")
    assert stack.sim_accepted() < DEVICES, "the send was over before the restarts"

    stack.sim("POST", "/control/delay", {"ms": 0})
    stack.wait_ended(message_id, DEVICES)
    figures = stack.verdict(message_id, tokens)
    log(f"postgres and redis restarted mid-send: {figures}")
    assert figures["deliveries"] == DEVICES
    assert (figures["missing"], figures["doubled"], figures["disagree"]) == (0, 0, 0), figures


def test_down_then_up_keeps_every_tenant_subscriber_and_delivery(stack):
    def census():
        return stack.psql(
            "SELECT (SELECT count(*) FROM tenants) || ' ' || (SELECT count(*) FROM subscribers) || ' ' || "
            "(SELECT count(*) FROM devices) || ' ' || (SELECT count(*) FROM deliveries) || ' ' || "
            "(SELECT md5(string_agg(id::text || status, ',' ORDER BY id)) FROM deliveries)")
    before = census()
    tenants, subscribers, _, deliveries, _ = before.split()
    assert int(tenants) >= 1 and int(subscribers) > DEVICES and int(deliveries) >= 2 * DEVICES + 1, before
    log(f"before down: {before}")

    run([CONTAINERS, "down"], capture=False)
    if stack.docker("info", check=False).returncode == 0:  # still running: not one the tests started
        left = stack.docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={os.environ['BUZZKIT_CONTAINERS_PROJECT']}")
        assert not left.stdout.strip(), "containers left after down"
    run([CONTAINERS, "up"], capture=False, timeout=1800)
    stack.reload()
    after = census()
    assert after == before
    # The keys bootstrapped before still work, and alice is still there.
    assert stack.api("GET", "/v1/subscribers/alice")["data"]["id"] == "alice"
