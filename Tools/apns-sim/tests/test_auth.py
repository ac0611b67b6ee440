"""Provider tokens: ES256 JWTs checked against registered keys, cached per connection."""
import time

from cryptography.hazmat.primitives.asymmetric import ec

from apns_client import ProviderKey, device_token
from test_validation import PAYLOAD, reason


def send(client, token, jwt):
    headers = {"apns-topic": "com.example.app"}
    if jwt is not None:
        headers["authorization"] = jwt if jwt.lower().startswith(("bearer ", "basic ")) else f"bearer {jwt}"
    return client.post(f"/3/device/{token or device_token()}", headers=headers, content=PAYLOAD)


def test_key_from_command_line_works(sim, client, cli_key):
    assert send(client, None, cli_key.token()).status_code == 200


def test_missing_provider_token(client):
    r = send(client, None, None)
    assert (r.status_code, reason(r)) == (403, "MissingProviderToken")


def test_malformed_tokens(client, key):
    good = key.token()
    for bad in ["garbage", "a.b.c", good.rsplit(".", 1)[0], good + "x", "Basic abc", good.replace(".", "", 1)]:
        r = send(client, None, bad)
        assert (r.status_code, reason(r)) == (403, "InvalidProviderToken"), bad


def test_unknown_key_id(client, key):
    r = send(client, None, key.token(kid="NOSUCHKEY1"))
    assert (r.status_code, reason(r)) == (403, "InvalidProviderToken")


def test_signature_from_another_key(client, key):
    other = ec.generate_private_key(ec.SECP256R1())
    r = send(client, None, key.token(signer=other))
    assert (r.status_code, reason(r)) == (403, "InvalidProviderToken")


def test_issuer_must_be_the_keys_team(client, key):
    r = send(client, None, key.token(iss="OTHERTEAM1"))
    assert (r.status_code, reason(r)) == (403, "InvalidProviderToken")


def test_algorithm_must_be_es256(client, key):
    r = send(client, None, key.token(alg="HS256"))
    assert (r.status_code, reason(r)) == (403, "InvalidProviderToken")


def test_expired_token(client, key):
    r = send(client, None, key.token(iat=int(time.time()) - 3700))
    assert (r.status_code, reason(r)) == (403, "ExpiredProviderToken")


def test_token_a_little_in_the_future_is_accepted(client, key):
    assert send(client, None, key.token(iat=int(time.time()) + 60)).status_code == 200


def test_token_far_in_the_future_is_invalid(client, key):
    r = send(client, None, key.token(iat=int(time.time()) + 3600))
    assert (r.status_code, reason(r)) == (403, "InvalidProviderToken")


def test_bearer_is_case_insensitive(client, key):
    assert send(client, None, "Bearer " + key.token()).status_code == 200


def test_token_reuse_on_one_connection(client, key):
    jwt = key.token()
    for _ in range(5):
        assert send(client, None, jwt).status_code == 200


def test_new_token_within_20_minutes_is_too_many_updates(sim, client, key):
    first = key.token(iat=int(time.time()) - 10)
    assert send(client, None, first).status_code == 200
    second = key.token()
    assert second != first
    r = send(client, None, second)
    assert (r.status_code, reason(r)) == (429, "TooManyProviderTokenUpdates")
    # The first token stays in force on that connection.
    assert send(client, None, first).status_code == 200
    # A new connection may use the new token.
    with sim.client() as other:
        assert send(other, None, second).status_code == 200


def test_tokens_of_different_keys_share_a_connection(sim, client, key):
    other = sim.register(ProviderKey())
    assert send(client, None, key.token()).status_code == 200
    assert send(client, None, other.token()).status_code == 200


def test_replacing_an_expired_token_is_allowed(client, key):
    old = key.token(iat=int(time.time()) - 3598)
    assert send(client, None, old).status_code == 200
    assert send(client, None, key.token()).status_code == 429  # still live: too early to replace
    time.sleep(3)  # let the old token pass its hour
    assert reason(send(client, None, old)) == "ExpiredProviderToken"
    assert send(client, None, key.token()).status_code == 200


def test_reset_clears_token_state(sim, client, key):
    assert send(client, None, key.token(iat=int(time.time()) - 5)).status_code == 200
    sim.post("/control/reset")
    assert send(client, None, key.token()).status_code == 200


def test_keys_endpoint_rejects_bad_keys(sim):
    r = sim.control.post("/control/keys", json={"kid": "K1", "team": "T1", "pem": "not a pem"})
    assert r.status_code == 400
    rsa_like = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"
    assert sim.control.post("/control/keys", json={"kid": "K1", "team": "T1", "pem": rsa_like}).status_code == 400
    p384 = ProviderKey(private_key=ec.generate_private_key(ec.SECP384R1()))
    r = sim.control.post("/control/keys", json={"kid": "K1", "team": "T1", "pem": p384.public_pem()})
    assert r.status_code == 400
    assert "P-256" in r.json()["error"]
