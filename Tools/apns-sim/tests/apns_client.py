"""Helpers for the simulator tests: ES256 provider tokens and a raw HTTP/2 connection.

The raw connection (the `h2` package over an ssl socket) gives exact control where httpx
would hide it: one connection for hundreds of streams, repeated headers, GOAWAY frames.
"""
import base64
import json
import os
import socket
import ssl
import time
import uuid

import h2.config
import h2.connection
import h2.events
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class ProviderKey:
    """A P-256 provider key as Apple issues them, with the key id and team id it belongs to."""

    def __init__(self, kid=None, team=None, private_key=None):
        self.kid = kid or uuid.uuid4().hex[:10].upper()
        self.team = team or uuid.uuid4().hex[:10].upper()
        self.private_key = private_key or ec.generate_private_key(ec.SECP256R1())

    @classmethod
    def from_pem(cls, pem: bytes, kid: str, team: str):
        return cls(kid, team, serialization.load_pem_private_key(pem, None))

    def public_pem(self) -> str:
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()

    def current(self) -> str:
        """One token reused for every request, as a real sender does (APNs refuses a new token on
        a connection more often than every 20 minutes)."""
        if not hasattr(self, "_current"):
            self._current = self.token()
        return self._current

    def token(self, iat=None, iss=None, kid=None, alg="ES256", signer=None) -> str:
        header = b64url(json.dumps({"alg": alg, "kid": kid or self.kid}).encode())
        claims = b64url(json.dumps({"iss": iss or self.team,
                                    "iat": int(time.time()) if iat is None else iat}).encode())
        signing_input = f"{header}.{claims}".encode()
        der = (signer or self.private_key).sign(signing_input, ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return f"{header}.{claims}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def device_token() -> str:
    return os.urandom(32).hex()


class Response:
    def __init__(self):
        self.status = None
        self.headers = []
        self.body = b""
        self.done = False
        self.reset = False

    def header(self, name):
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def json(self):
        return json.loads(self.body)


class GoAway:
    def __init__(self, last_stream_id, error_code, additional_data):
        self.last_stream_id = last_stream_id
        self.error_code = error_code
        self.additional_data = additional_data


class RawH2:
    """A blocking HTTP/2 client connection that can keep many streams in flight."""

    def __init__(self, port, ca, host="127.0.0.1"):
        ctx = ssl.create_default_context(cafile=ca)
        ctx.set_alpn_protocols(["h2"])
        self.sock = ctx.wrap_socket(socket.create_connection((host, port), timeout=30), server_hostname=host)
        assert self.sock.selected_alpn_protocol() == "h2"
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.responses = {}
        self.goaway = None
        self.closed = False
        self.settings_seen = False
        # Wait for the server's SETTINGS so its stream limit is known before bursts.
        while not self.settings_seen and not self.closed:
            self._pump()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, path, headers=(), body=b"", method="POST"):
        sid = self.conn.get_next_available_stream_id()
        all_headers = [(":method", method), (":scheme", "https"), (":authority", "127.0.0.1"), (":path", path)]
        all_headers += list(headers)
        self.conn.send_headers(sid, all_headers, end_stream=not body)
        if body:
            self.conn.send_data(sid, body, end_stream=True)
        self.responses[sid] = Response()
        return sid

    def _frames(self, data):
        """Splits received bytes into frames. GOAWAY frames are kept from the h2 package, which
        would otherwise refuse the responses of streams still finishing after it."""
        self._inbuf += data
        passed = b""
        while len(self._inbuf) >= 9:
            length = int.from_bytes(self._inbuf[:3], "big")
            if len(self._inbuf) < 9 + length:
                break
            frame, self._inbuf = self._inbuf[:9 + length], self._inbuf[9 + length:]
            if frame[3] == 0x7:
                self.goaway = GoAway(int.from_bytes(frame[9:13], "big") & 0x7FFFFFFF,
                                     int.from_bytes(frame[13:17], "big"), frame[17:])
            else:
                passed += frame
        return passed

    _inbuf = b""

    def _pump(self):
        data = self.sock.recv(65536)
        if not data:
            self.closed = True
            return
        for ev in self.conn.receive_data(self._frames(data)):
            if isinstance(ev, h2.events.RemoteSettingsChanged):
                self.settings_seen = True
            if isinstance(ev, h2.events.ResponseReceived):
                self.responses[ev.stream_id].status = int(dict(ev.headers)[":status"])
                self.responses[ev.stream_id].headers = list(ev.headers)
            elif isinstance(ev, h2.events.DataReceived):
                self.responses[ev.stream_id].body += ev.data
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                self.responses[ev.stream_id].done = True
            elif isinstance(ev, h2.events.StreamReset):
                self.responses[ev.stream_id].reset = True
                self.responses[ev.stream_id].done = True
        self.flush()

    def wait(self, sids):
        self.flush()
        while not all(self.responses[s].done for s in sids):
            if self.closed:
                raise ConnectionError("connection closed with streams pending")
            self._pump()
        return [self.responses[s] for s in sids]

    def wait_closed(self):
        while not self.closed:
            try:
                self._pump()
            except (ConnectionError, ssl.SSLError, OSError):
                self.closed = True

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
