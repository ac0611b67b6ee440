"""Connection-level faults for testing clients: GOAWAY after N requests, a connection dropped
mid-request, a lowered stream limit, retry-after on injected faults, the token clock, and the
counters a client's behaviour is checked by (peak open streams, connections mixing teams)."""
import json
import time

import pytest

from apns_client import ProviderKey, device_token
from test_validation import PAYLOAD, push


def headers_for(key):
    return [("authorization", f"bearer {key.current()}"), ("apns-topic", "com.example.app")]


def test_goaway_after_n_requests_refuses_the_later_streams(sim, key):
    raw = sim.raw()
    try:
        # Warm-up on this connection, then arm: the 3rd request from now brings the GOAWAY.
        (first,) = raw.wait([raw.request(f"/3/device/{device_token()}", headers_for(key), PAYLOAD)])
        assert first.status == 200
        sim.post("/control/goaway", {"afterRequests": 3})
        sids = [raw.request(f"/3/device/{device_token()}", headers_for(key), PAYLOAD) for _ in range(10)]
        raw.flush()
        while raw.goaway is None or not all(raw.responses[s].done for s in sids if s <= raw.goaway.last_stream_id):
            raw._pump()
        last = raw.goaway.last_stream_id
        assert last >= sids[2]
        answered = [s for s in sids if s <= last]
        assert all(raw.responses[s].status == 200 for s in answered)
        assert json.loads(raw.goaway.additional_data) == {"reason": "Shutdown"}
    finally:
        raw.close()
    stats = sim.get("/control/stats")
    # Nothing above the GOAWAY's last stream id was accepted: a client may resend those safely.
    assert stats["accepted"] == 1 + len(answered)
    assert stats["goawaysSent"] == 1


def test_goaway_fires_once(sim, client, key):
    sim.post("/control/goaway", {"afterRequests": 1})
    assert push(client, key).status_code == 200
    for _ in range(3):
        assert push(client, key).status_code == 200  # httpx reconnects after the GOAWAY
    assert sim.get("/control/stats")["goawaysSent"] == 1


def test_drop_resets_the_connection_without_answers(sim, key):
    raw = sim.raw()
    try:
        sim.post("/control/delay", {"ms": 2000})
        parked = [raw.request(f"/3/device/{device_token()}", headers_for(key), PAYLOAD) for _ in range(3)]
        raw.flush()
        time.sleep(0.3)  # the three are accepted and parked on the simulator's timer
        sim.post("/control/drop", {"afterRequests": 1})
        raw.request(f"/3/device/{device_token()}", headers_for(key), PAYLOAD)
        with pytest.raises((ConnectionError, OSError)):
            raw.wait(parked)
    finally:
        raw.close()
    stats = sim.get("/control/stats")
    assert stats["connections"]["dropped"] == 1
    assert stats["accepted"] == 3  # the parked ones were taken; the fourth was not
    sim.post("/control/delay", {"ms": 0})


def test_settings_lower_the_stream_limit_on_open_connections(sim, key):
    raw = sim.raw()
    try:
        assert raw.conn.remote_settings.max_concurrent_streams == 1000
        sim.post("/control/settings", {"maxConcurrentStreams": 7})
        deadline = time.time() + 5
        while raw.conn.remote_settings.max_concurrent_streams != 7 and time.time() < deadline:
            raw._pump()
        assert raw.conn.remote_settings.max_concurrent_streams == 7
    finally:
        raw.close()
    assert sim.get("/control/stats")["maxConcurrentStreams"] == 7
    # New connections get it too; reset restores APNs's 1000.
    raw = sim.raw()
    try:
        assert raw.conn.remote_settings.max_concurrent_streams == 7
    finally:
        raw.close()
    sim.post("/control/reset")
    raw = sim.raw()
    try:
        assert raw.conn.remote_settings.max_concurrent_streams == 1000
    finally:
        raw.close()


def test_peak_open_streams_is_reported(sim, key):
    raw = sim.raw()
    try:
        sim.post("/control/delay", {"ms": 500, "count": 20})
        sids = [raw.request(f"/3/device/{device_token()}", headers_for(key), PAYLOAD) for _ in range(20)]
        assert [r.status for r in raw.wait(sids)] == [200] * 20
    finally:
        raw.close()
    assert sim.get("/control/stats")["maxOpenStreams"] == 20


def test_fail_with_retry_after(sim, client, key):
    sim.post("/control/fail", {"status": 429, "count": 1, "retryAfter": 7})
    r = push(client, key)
    assert r.status_code == 429
    assert r.headers["retry-after"] == "7"
    sim.post("/control/fail", {"status": 503, "count": 1})
    r = push(client, key)
    assert r.status_code == 503
    assert "retry-after" not in r.headers
    assert sim.control.post("/control/fail", json={"status": 429, "retryAfter": -1}).status_code == 400


def test_clock_offset_judges_token_age(sim, client, key):
    # A token issued 70 minutes "from now" is refused today, and fine once the clock moved on.
    future = key.token(iat=int(time.time()) + 70 * 60)
    h = {"authorization": f"bearer {future}", "apns-topic": "com.example.app"}
    assert client.post(f"/3/device/{device_token()}", headers=h, content=PAYLOAD).json()["reason"] == "InvalidProviderToken"
    sim.post("/control/clock", {"offsetMs": 70 * 60 * 1000})
    with sim.client() as fresh:
        assert fresh.post(f"/3/device/{device_token()}", headers=h, content=PAYLOAD).status_code == 200
    # The token used before the shift is now 70 minutes old: expired.
    assert push(client, key).json()["reason"] == "ExpiredProviderToken"
    assert sim.get("/control/stats")["clockOffsetMs"] == 70 * 60 * 1000


def test_clock_offset_allows_a_renewal_after_twenty_minutes(sim, key):
    with sim.client() as c:
        first = key.token()
        h = {"authorization": f"bearer {first}", "apns-topic": "com.example.app"}
        assert c.post(f"/3/device/{device_token()}", headers=h, content=PAYLOAD).status_code == 200
        renewed = key.token(iat=int(time.time()) + 1)
        h["authorization"] = f"bearer {renewed}"
        r = c.post(f"/3/device/{device_token()}", headers=h, content=PAYLOAD)
        assert (r.status_code, r.json()["reason"]) == (429, "TooManyProviderTokenUpdates")
        sim.post("/control/clock", {"offsetMs": 21 * 60 * 1000})
        assert c.post(f"/3/device/{device_token()}", headers=h, content=PAYLOAD).status_code == 200


def test_connections_mixing_teams_are_counted(sim, key):
    other = sim.register(ProviderKey())
    with sim.client() as c:
        for k in (key, key, other):
            h = {"authorization": f"bearer {k.current()}", "apns-topic": "com.example.app"}
            assert c.post(f"/3/device/{device_token()}", headers=h, content=PAYLOAD).status_code == 200
    assert sim.get("/control/stats")["connections"]["mixedTeams"] == 1
    with sim.client() as c:
        h = {"authorization": f"bearer {key.current()}", "apns-topic": "com.example.app"}
        assert c.post(f"/3/device/{device_token()}", headers=h, content=PAYLOAD).status_code == 200
    assert sim.get("/control/stats")["connections"]["mixedTeams"] == 1


def test_connection_fault_input_is_checked(sim):
    assert sim.control.post("/control/goaway", json={"afterRequests": 0}).status_code == 400
    assert sim.control.post("/control/drop", json={"afterRequests": "x"}).status_code == 400
    assert sim.control.post("/control/settings", json={}).status_code == 400
    assert sim.control.post("/control/settings", json={"maxConcurrentStreams": 0}).status_code == 400
    assert sim.control.post("/control/clock", json={}).status_code == 400
