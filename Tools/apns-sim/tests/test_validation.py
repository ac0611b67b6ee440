"""Request validation: each rule of "Sending notification requests to APNs" and its reason."""
import json
import re
import uuid

import pytest

from apns_client import device_token

UUID_RE = re.compile(r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")
PAYLOAD = b'{"aps":{"alert":"hello"}}'


def push(client, key, token=None, headers=None, body=PAYLOAD, method="POST", path=None, auth=True):
    h = {"apns-topic": "com.example.app"}
    if auth:
        h["authorization"] = f"bearer {key.current()}"
    h.update(headers or {})
    h = {k: v for k, v in h.items() if v is not None}
    return client.request(method, path or f"/3/device/{token or device_token()}", headers=h, content=body)


def reason(r):
    return r.json()["reason"]


def test_success_has_apns_id_and_empty_body(client, key):
    r = push(client, key)
    assert r.status_code == 200
    assert r.http_version == "HTTP/2"
    assert UUID_RE.match(r.headers["apns-id"])
    assert UUID_RE.match(r.headers["apns-unique-id"])
    assert r.content == b""


def test_apns_id_is_echoed(client, key):
    given = str(uuid.uuid4())
    r = push(client, key, headers={"apns-id": given})
    assert r.status_code == 200
    assert r.headers["apns-id"] == given


def test_every_error_carries_an_apns_id(client, key):
    given = str(uuid.uuid4())
    r = push(client, key, headers={"apns-id": given, "apns-topic": None})
    assert (r.status_code, reason(r)) == (400, "MissingTopic")
    assert r.headers["apns-id"] == given
    assert r.headers["content-type"] == "application/json"


def test_bad_message_id(client, key):
    r = push(client, key, headers={"apns-id": "not-a-uuid"})
    assert (r.status_code, reason(r)) == (400, "BadMessageId")
    assert UUID_RE.match(r.headers["apns-id"])


def test_method_not_allowed(client, key):
    r = push(client, key, method="GET", body=b"")
    assert (r.status_code, reason(r)) == (405, "MethodNotAllowed")


@pytest.mark.parametrize("path", ["/3/devices/" + "ab" * 32, "/2/device/" + "ab" * 32, "/", "/3/device/ab/cd"])
def test_bad_path(client, key, path):
    r = push(client, key, path=path)
    assert (r.status_code, reason(r)) == (404, "BadPath")


def test_missing_device_token(client, key):
    r = push(client, key, path="/3/device/")
    assert (r.status_code, reason(r)) == (400, "MissingDeviceToken")


@pytest.mark.parametrize("token", ["ab" * 31, "zz" * 32, "ab" * 31 + "g1"])
def test_bad_device_token(client, key, token):
    r = push(client, key, token=token)
    assert (r.status_code, reason(r)) == (400, "BadDeviceToken")


def test_long_and_upper_case_tokens_are_accepted(client, key):
    assert push(client, key, token="AB" * 50).status_code == 200


def test_missing_topic(client, key):
    r = push(client, key, headers={"apns-topic": None})
    assert (r.status_code, reason(r)) == (400, "MissingTopic")


def test_invalid_push_type(client, key):
    r = push(client, key, headers={"apns-push-type": "banner"})
    assert (r.status_code, reason(r)) == (400, "InvalidPushType")


@pytest.mark.parametrize("push_type", ["alert", "background", "location", "mdm"])
def test_plain_push_types(client, key, push_type):
    headers = {"apns-push-type": push_type}
    if push_type == "background":
        headers["apns-priority"] = "5"
    assert push(client, key, headers=headers).status_code == 200


@pytest.mark.parametrize("push_type,suffix", [
    ("liveactivity", ".push-type.liveactivity"), ("pushtostart", ".push-type.liveactivity"),
    ("voip", ".voip"), ("complication", ".complication"), ("fileprovider", ".pushkit.fileprovider"),
])
def test_push_types_that_need_a_topic_suffix(client, key, push_type, suffix):
    r = push(client, key, headers={"apns-push-type": push_type, "apns-topic": "com.example.app"})
    assert (r.status_code, reason(r)) == (400, "DeviceTokenNotForTopic")
    ok = push(client, key, headers={"apns-push-type": push_type, "apns-topic": "com.example.app" + suffix})
    assert ok.status_code == 200


@pytest.mark.parametrize("priority", ["7", "0", "high", ""])
def test_bad_priority(client, key, priority):
    r = push(client, key, headers={"apns-priority": priority})
    assert (r.status_code, reason(r)) == (400, "BadPriority")


def test_background_push_with_priority_10(client, key):
    r = push(client, key, headers={"apns-push-type": "background", "apns-priority": "10"})
    assert (r.status_code, reason(r)) == (400, "BadPriority")


def test_background_push_defaults_to_priority_5(sim, client, key):
    token = device_token()
    assert push(client, key, token=token, headers={"apns-push-type": "background"}).status_code == 200
    assert sim.pushes(token)[0]["priority"] == 5


@pytest.mark.parametrize("priority", ["1", "5", "10"])
def test_valid_priorities(client, key, priority):
    assert push(client, key, headers={"apns-priority": priority}).status_code == 200


@pytest.mark.parametrize("expiration", ["tomorrow", "-1", "1.5", ""])
def test_bad_expiration(client, key, expiration):
    r = push(client, key, headers={"apns-expiration": expiration})
    assert (r.status_code, reason(r)) == (400, "BadExpirationDate")


def test_collapse_id_limit(client, key):
    assert push(client, key, headers={"apns-collapse-id": "c" * 64}).status_code == 200
    r = push(client, key, headers={"apns-collapse-id": "c" * 65})
    assert (r.status_code, reason(r)) == (400, "BadCollapseId")


def test_payload_empty(client, key):
    r = push(client, key, body=b"")
    assert (r.status_code, reason(r)) == (400, "PayloadEmpty")


def payload_of_size(n):
    base = b'{"aps":{"alert":"x"},"pad":"'
    return base + b"p" * (n - len(base) - 2) + b'"}'


def test_payload_size_limits(client, key):
    assert push(client, key, body=payload_of_size(4096)).status_code == 200
    r = push(client, key, body=payload_of_size(4097))
    assert (r.status_code, reason(r)) == (413, "PayloadTooLarge")
    big = push(client, key, body=payload_of_size(100_000))
    assert (big.status_code, reason(big)) == (413, "PayloadTooLarge")


def test_voip_payload_limit_is_5120(client, key):
    h = {"apns-push-type": "voip", "apns-topic": "com.example.app.voip"}
    assert push(client, key, headers=h, body=payload_of_size(5120)).status_code == 200
    r = push(client, key, headers=h, body=payload_of_size(5121))
    assert (r.status_code, reason(r)) == (413, "PayloadTooLarge")


@pytest.mark.parametrize("body", [
    b'{"aps":', b"[1,2]", b'"aps"', b'{"aps":{}} trailing', b'{"a":"\xff"}', b"{'aps':{}}",
    b'{"aps":{"alert":"x",}}', b'{"a":01}', b'{"a":"\x01"}',
])
def test_invalid_json_is_bad_message(client, key, body):
    r = push(client, key, body=body)
    assert (r.status_code, reason(r)) == (400, "BadMessage")


def test_payload_without_aps_is_accepted(client, key):
    """APNs does not validate the aps dictionary strictly; neither does the simulator."""
    assert push(client, key, body=b'{"custom":1}').status_code == 200


def test_unicode_payload_is_accepted(client, key):
    body = json.dumps({"aps": {"alert": "h\u00e9llo \U0001F600"}}, ensure_ascii=False).encode()
    assert push(client, key, body=body).status_code == 200


def test_duplicate_headers(sim, key):
    raw = sim.raw()
    try:
        sid = raw.request("/3/device/" + device_token(), [
            ("authorization", f"bearer {key.token()}"), ("apns-topic", "com.a"), ("apns-topic", "com.b"),
        ], PAYLOAD)
        (r,) = raw.wait([sid])
        assert (r.status, r.json()["reason"]) == (400, "DuplicateHeaders")
    finally:
        raw.close()


def test_rejections_are_counted_by_reason(sim, client, key):
    push(client, key, headers={"apns-topic": None})
    push(client, key, headers={"apns-topic": None})
    push(client, key)
    stats = sim.get("/control/stats")
    assert stats["accepted"] == 1
    assert stats["rejected"] == {"MissingTopic": 2}
