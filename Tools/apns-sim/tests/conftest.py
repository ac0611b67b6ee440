"""Fixtures: the simulator started by run.sh (ports, CA and a provider key in the environment)."""
import os
import ssl

import httpx
import pytest

from apns_client import ProviderKey, RawH2


class Sim:
    def __init__(self):
        self.port = int(os.environ["SIM_PORT"])
        self.control_port = int(os.environ["SIM_CONTROL_PORT"])
        self.ca = os.environ["SIM_CA"]
        self.base = f"https://127.0.0.1:{self.port}"
        self.control = httpx.Client(base_url=f"http://127.0.0.1:{self.control_port}", timeout=30)

    def post(self, path, body=None):
        r = self.control.post(path, json=body if body is not None else {})
        assert r.status_code == 200, r.text
        return r.json()

    def get(self, path, **params):
        r = self.control.get(path, params=params)
        assert r.status_code == 200, r.text
        return r.json()

    def pushes(self, token, limit=None):
        params = {"token": token}
        if limit is not None:
            params["limit"] = limit
        return self.get("/control/pushes", **params)

    def register(self, key: ProviderKey):
        self.post("/control/keys", {"kid": key.kid, "team": key.team, "pem": key.public_pem()})
        return key

    def client(self, **kw):
        return httpx.Client(http2=True, verify=self.tls(), base_url=self.base, timeout=30, **kw)

    def tls(self):
        return ssl.create_default_context(cafile=self.ca)

    def raw(self):
        return RawH2(self.port, self.ca)


@pytest.fixture(scope="session")
def sim():
    s = Sim()
    yield s
    s.control.close()


@pytest.fixture(autouse=True)
def reset(sim):
    sim.post("/control/reset")
    yield


@pytest.fixture
def key(sim):
    """A fresh provider key registered through the control API."""
    return sim.register(ProviderKey())


@pytest.fixture(scope="session")
def cli_key():
    """The key run.sh handed to the simulator with --key KID=TEAM:pub.pem."""
    with open(os.environ["SIM_CLI_KEY"], "rb") as f:
        return ProviderKey.from_pem(f.read(), os.environ["SIM_CLI_KID"], os.environ["SIM_CLI_TEAM"])


@pytest.fixture
def client(sim):
    with sim.client() as c:
        yield c
