#!/usr/bin/env python3
"""HTTP/1.1 echo server for HTTPClientTests.

Binds 127.0.0.1 on a free port (port 0), prints the port on the first stdout line, then serves:
  /delay?ms=N  sleeps N ms, then echoes (for timeouts and cancellation)
  /status/N    answers with status N
  /hits        the number of requests seen so far (plain text)
  anything else: a JSON echo {"method", "path", "headers": [[name, value]...], "body", "bodyLength"}
Every echo also sets two `x-multi` headers, to test multi-valued response headers.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

HITS = 0
HITS_LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        global HITS
        url = urlparse(self.path)
        if url.path != "/hits":
            with HITS_LOCK:
                HITS += 1
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status = 200
        if url.path == "/hits":
            with HITS_LOCK:
                self.reply(200, str(HITS).encode(), "text/plain")
            return
        if url.path == "/delay":
            time.sleep(int(parse_qs(url.query).get("ms", ["1000"])[0]) / 1000.0)
        if url.path.startswith("/status/"):
            status = int(url.path[len("/status/"):])
        echo = {
            "method": self.command,
            "path": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body": body.decode("utf-8", "replace"),
            "bodyLength": len(body),
        }
        self.reply(status, json.dumps(echo).encode(), "application/json")

    def reply(self, status, payload, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("X-Multi", "one")
        self.send_header("X-Multi", "two")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


def main():
    server = Server(("127.0.0.1", 0), Handler)
    sys.stdout.write("%d\n" % server.server_address[1])
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
