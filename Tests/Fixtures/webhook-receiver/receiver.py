"""A tenant's webhook endpoint for the tests: verifies every request with the `standardwebhooks`
package from PyPI (pinned in deploy/lib/common.sh: a verifier BuzzKit did not write) and
validates every body against the API document's `webhooks` schemas with `jsonschema`.

    receiver.py --port N --state DIR [--openapi FILE]

DIR/secrets: the endpoints' secrets (whsec_...), one per line, re-read on every request; each
request records which of them verify it (by line number). DIR/mode: how to answer, re-read on
every request: `ok` (200 `{"ok":true}`, the default), `status N [RETRY_AFTER]` (answer N, with Retry-After),
`slow SECONDS` (200 after a pause), `fail-first N` (answer 500 to the first attempt of each
webhook-id, then 200). Every request is appended to DIR/received.jsonl (one JSON object a line:
id, timestamp, signature, verified_with, schema_error, type, body, answered, at).
GET /received answers that file as a JSON array.
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--state", required=True)
parser.add_argument("--openapi")
args = parser.parse_args()

lock = threading.Lock()
seen_ids = set()
schemas = None
if args.openapi:
    with open(args.openapi) as f:
        document = json.load(f)
    schemas = {}
    for name, item in document.get("webhooks", {}).items():
        ref = item["post"]["requestBody"]["content"]["application/json"]["schema"]
        schemas[name] = {"$ref": ref["$ref"], "components": document["components"]}


def read(name, default=""):
    try:
        with open(os.path.join(args.state, name)) as f:
            return f.read()
    except FileNotFoundError:
        return default


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path != "/received":
            return self.answer(404, b"")
        lines = read("received.jsonl").splitlines()
        body = ("[" + ",".join(lines) + "]").encode()
        self.answer(200, body, "application/json")

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        headers = {k: v for k, v in self.headers.items()}
        secrets = [s.strip() for s in read("secrets").splitlines() if s.strip()]
        verified = []
        for index, secret in enumerate(secrets):
            try:
                Webhook(secret).verify(raw, headers)
                verified.append(index)
            except WebhookVerificationError:
                pass
        body = None
        schema_error = None
        try:
            body = json.loads(raw)
        except ValueError as error:
            schema_error = f"not JSON: {error}"
        if body is not None and schemas is not None:
            schema = schemas.get(body.get("type")) if isinstance(body, dict) else None
            if schema is None:
                schema_error = f"no schema for type {body.get('type') if isinstance(body, dict) else body!r}"
            else:
                try:
                    jsonschema.validate(body, schema, format_checker=jsonschema.FormatChecker())
                except jsonschema.ValidationError as error:
                    schema_error = f"{error.message} at {list(error.absolute_path)}"
        mode = (read("mode", "ok").split() or ["ok"])
        status, extra = 200, {}
        webhook_id = headers.get("webhook-id") or headers.get("Webhook-Id")
        if mode[0] == "status":
            status = int(mode[1])
            if len(mode) > 2:
                extra["Retry-After"] = mode[2]
        elif mode[0] == "slow":
            time.sleep(float(mode[1]))
        elif mode[0] == "fail-first":
            with lock:
                first = webhook_id not in seen_ids
                seen_ids.add(webhook_id)
            if first:
                status = int(mode[1])
        record = {
            "id": webhook_id, "timestamp": headers.get("webhook-timestamp") or headers.get("Webhook-Timestamp"),
            "signature": headers.get("webhook-signature") or headers.get("Webhook-Signature"),
            "verified_with": verified, "schema_error": schema_error,
            "type": body.get("type") if isinstance(body, dict) else None, "body": body, "answered": status,
            "at": time.time(),
        }
        with lock:
            with open(os.path.join(args.state, "received.jsonl"), "a") as f:
                f.write(json.dumps(record) + "\n")
        self.answer(status, b'{"ok":true}' if status < 300 else b'{"error":"the test said so"}', "application/json", extra)

    def answer(self, status, body, content_type="text/plain", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
print(f"receiver listening on 127.0.0.1:{args.port}", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
