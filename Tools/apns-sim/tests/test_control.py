"""The control API: device-token states, injected faults and delays, GOAWAY, recordings, and
many concurrent streams on one connection."""
import asyncio
import json
import time
import uuid

import httpx
import pytest

from apns_client import device_token
from test_validation import PAYLOAD, push, reason


def test_unregistered_token_gets_410_with_timestamp(sim, client, key):
    token = device_token()
    assert push(client, key, token=token).status_code == 200
    sim.post("/control/unregister", {"token": token, "timestamp": 1700000000123})
    r = push(client, key, token=token)
    assert r.status_code == 410
    assert r.json() == {"reason": "Unregistered", "timestamp": 1700000000123}
    # Device tokens are hex: the rule matches whatever the case.
    assert push(client, key, token=token.upper()).status_code == 410
    assert push(client, key).status_code == 200


def test_unregister_defaults_timestamp_to_now(sim, client, key):
    token = device_token()
    before = int(time.time() * 1000)
    sim.post("/control/unregister", {"token": token})
    body = push(client, key, token=token).json()
    assert body["reason"] == "Unregistered"
    assert body["timestamp"] >= before


def test_bad_token_rule_and_clear(sim, client, key):
    token = device_token()
    sim.post("/control/bad-token", {"token": token})
    r = push(client, key, token=token)
    assert (r.status_code, reason(r)) == (400, "BadDeviceToken")
    sim.post("/control/clear-token", {"token": token})
    assert push(client, key, token=token).status_code == 200


def test_validation_comes_before_device_state(sim, client, key):
    token = device_token()
    sim.post("/control/unregister", {"token": token})
    r = push(client, key, token=token, headers={"apns-topic": None})
    assert reason(r) == "MissingTopic"


@pytest.mark.parametrize("status,reason_text", [
    (429, "TooManyRequests"), (500, "InternalServerError"), (503, "ServiceUnavailable")])
def test_fail_n_times_then_succeed(sim, client, key, status, reason_text):
    sim.post("/control/fail", {"status": status, "reason": reason_text, "count": 2})
    for _ in range(2):
        r = push(client, key)
        assert (r.status_code, reason(r)) == (status, reason_text)
        assert r.headers["apns-id"]
    assert push(client, key).status_code == 200


def test_fail_defaults_reason_from_status(sim, client, key):
    sim.post("/control/fail", {"status": 503})
    assert reason(push(client, key)) == "ServiceUnavailable"
    assert push(client, key).status_code == 200


def test_fail_for_a_period(sim, client, key):
    sim.post("/control/fail", {"status": 500, "seconds": 600})
    for _ in range(3):
        assert push(client, key).status_code == 500
    sim.post("/control/reset")
    assert push(client, key).status_code == 200


def test_invalid_requests_do_not_consume_faults(sim, client, key):
    sim.post("/control/fail", {"status": 503, "count": 1})
    assert reason(push(client, key, headers={"apns-topic": None})) == "MissingTopic"
    assert push(client, key).status_code == 503
    assert push(client, key).status_code == 200


def test_fail_rejects_bad_input(sim):
    assert sim.control.post("/control/fail", json={"status": 200}).status_code == 400
    assert sim.control.post("/control/fail", json={"status": 500, "reason": "a b"}).status_code == 400
    assert sim.control.post("/control/delay", json={}).status_code == 400
    assert sim.control.post("/control/unregister", json={}).status_code == 400
    assert sim.control.post("/control/nothing", json={}).status_code == 404
    assert sim.control.post("/control/reset", content=b"{nope").status_code == 400


def test_delay_does_not_block_other_streams(sim, key):
    """A delayed response is parked on a timer: a later request on the same connection is
    answered first, and the delayed one still arrives, no sooner than asked."""
    headers = {"authorization": f"bearer {key.token()}", "apns-topic": "com.example.app"}

    async def run():
        order = []
        async with httpx.AsyncClient(http2=True, verify=sim.tls(), base_url=sim.base, timeout=30) as c:
            # Warm the connection so both requests share it.
            assert (await c.post(f"/3/device/{device_token()}", headers=headers, content=PAYLOAD)).status_code == 200
            sim.post("/control/delay", {"ms": 1500, "count": 1})

            async def one(name):
                start = time.monotonic()
                r = await c.post(f"/3/device/{device_token()}", headers=headers, content=PAYLOAD)
                order.append((name, r.status_code, time.monotonic() - start))

            slow = asyncio.create_task(one("slow"))
            await asyncio.sleep(0.2)
            await one("fast")
            await slow
        return order

    order = asyncio.run(run())
    assert [o[0] for o in order] == ["fast", "slow"]
    assert all(o[1] == 200 for o in order)
    assert order[1][2] >= 1.4


def test_delay_applies_to_errors_too(sim, client, key):
    sim.post("/control/delay", {"ms": 300, "count": 1})
    start = time.monotonic()
    r = push(client, key, headers={"apns-topic": None})
    assert reason(r) == "MissingTopic"
    assert time.monotonic() - start >= 0.29


def test_goaway_finishes_in_flight_streams_then_client_reconnects(sim, key):
    raw = sim.raw()
    try:
        headers = [("authorization", f"bearer {key.token()}"), ("apns-topic", "com.example.app")]
        sim.post("/control/delay", {"ms": 800, "count": 1})
        sid = raw.request(f"/3/device/{device_token()}", headers, PAYLOAD)
        raw.flush()
        time.sleep(0.2)  # the stream is now parked on the simulator's timer
        sim.post("/control/goaway")
        (r,) = raw.wait([sid])
        assert r.status == 200  # in-flight stream completed after GOAWAY
        raw.wait_closed()
        assert raw.goaway is not None
        assert raw.goaway.last_stream_id == sid
        assert json.loads(raw.goaway.additional_data) == {"reason": "Shutdown"}
    finally:
        raw.close()
    # httpx notices the GOAWAY and opens a new connection.
    with sim.client() as c:
        jwt = key.token()
        hdrs = {"authorization": f"bearer {jwt}", "apns-topic": "com.example.app"}
        assert c.post(f"/3/device/{device_token()}", headers=hdrs, content=PAYLOAD).status_code == 200
        sim.post("/control/goaway")
        time.sleep(0.2)
        for _ in range(3):
            try:
                r = c.post(f"/3/device/{device_token()}", headers=hdrs, content=PAYLOAD)
                break
            except httpx.TransportError:
                continue  # written to the closing connection: retry, as a sender would
        assert r.status_code == 200


def test_recorded_pushes_keep_exact_payload_and_headers(sim, client, key):
    token = device_token()
    payload = '{ "aps" : {"alert":"h\u00e9llo \\"q\\"", "badge": 3},\n "x":[1, 2.5e3, null] }'.encode()
    apns_id = str(uuid.uuid4())
    headers = {"apns-push-type": "alert", "apns-priority": "5", "apns-expiration": "1700000000",
               "apns-collapse-id": "grp-1", "apns-id": apns_id, "x-custom": "value 1"}
    assert push(client, key, token=token, headers=headers, body=payload).status_code == 200
    (rec,) = sim.pushes(token)
    assert rec["payload"].encode() == payload
    assert rec["token"] == token
    assert rec["apnsId"] == apns_id
    assert rec["topic"] == "com.example.app"
    assert rec["pushType"] == "alert"
    assert rec["priority"] == 5
    assert rec["expiration"] == 1700000000
    assert rec["collapseId"] == "grp-1"
    assert rec["headers"]["x-custom"] == "value 1"
    assert rec["headers"]["apns-topic"] == "com.example.app"
    assert rec["headers"]["apns-collapse-id"] == "grp-1"
    assert "authorization" not in rec["headers"]
    assert not any(h.startswith(":") for h in rec["headers"])
    assert abs(rec["receivedAt"] - time.time() * 1000) < 600_000


def test_recordings_are_in_order_and_limited(sim, client, key):
    token = device_token()
    for i in range(5):
        assert push(client, key, token=token, body=json.dumps({"aps": {}, "n": i}).encode()).status_code == 200
    push(client, key, token=token, headers={"apns-topic": None})  # rejected: not recorded
    recs = sim.pushes(token)
    assert [json.loads(r["payload"])["n"] for r in recs] == [0, 1, 2, 3, 4]
    assert [json.loads(r["payload"])["n"] for r in sim.pushes(token, limit=2)] == [3, 4]
    assert sim.pushes(device_token()) == []
    assert sim.get("/control/stats")["recorded"] == 5


def test_500_concurrent_streams_on_one_connection(sim, key):
    raw = sim.raw()
    try:
        headers = [("authorization", f"bearer {key.token()}"), ("apns-topic", "com.example.app")]
        tokens = [device_token() for _ in range(500)]
        sids = [raw.request(f"/3/device/{t}", headers, json.dumps({"aps": {}, "i": i}).encode())
                for i, t in enumerate(tokens)]
        responses = raw.wait(sids)
        assert [r.status for r in responses] == [200] * 500
        assert len({r.header("apns-id") for r in responses}) == 500
        stats = sim.get("/control/stats")
        assert stats["accepted"] == 500
        for i in (0, 250, 499):
            assert json.loads(sim.pushes(tokens[i])[0]["payload"])["i"] == i
    finally:
        raw.close()


def test_http1_and_alpn_without_h2_are_refused(sim):
    import socket
    import ssl
    ctx = ssl.create_default_context(cafile=sim.ca)
    ctx.set_alpn_protocols(["http/1.1"])
    with socket.create_connection(("127.0.0.1", sim.port), timeout=10) as s:
        with pytest.raises(ssl.SSLError):
            ctx.wrap_socket(s, server_hostname="127.0.0.1")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tls_1_1_is_refused(sim):
    import socket
    import ssl
    ctx = ssl.create_default_context(cafile=sim.ca)
    ctx.set_alpn_protocols(["h2"])
    ctx.maximum_version = ssl.TLSVersion.TLSv1_1  # noqa: deprecated on purpose
    with socket.create_connection(("127.0.0.1", sim.port), timeout=10) as s:
        with pytest.raises(ssl.SSLError):
            ctx.wrap_socket(s, server_hostname="127.0.0.1")


def test_stats_and_health(sim, client, key):
    assert sim.get("/control/health") == {"ok": True}
    push(client, key)
    stats = sim.get("/control/stats")
    assert stats["accepted"] == 1
    assert stats["connections"]["current"] >= 1
    assert stats["streams"] >= 1
    assert stats["recording"] is True
