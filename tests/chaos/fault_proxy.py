#!/usr/bin/env python3
"""A fault-injecting HTTP proxy for the chaos suite, in front of an OpenAI-compatible endpoint
(`allot serve`).

A share (--rate) of the generation requests (POST .../completions) gets one fault, drawn in
turn from: HTTP 500, HTTP 429 with Retry-After: 1, a connection closed without a response, and a
3 s stall before the request is forwarded. Everything else (adapter loads, /health, /v1/models)
passes untouched: the faults are the endpoint's, not the learner's control plane. The faults
drawn are counted by kind in --stats (JSON, rewritten after each request).
"""
import argparse
import http.client
import http.server
import json
import random
import socket
import sys
import threading
import time
import urllib.parse

KINDS = ("http_500", "http_429_retry_after", "dropped_connection", "stall_3s")


class State:
    def __init__(self, upstream, rate, seed, stats_path):
        u = urllib.parse.urlparse(upstream)
        self.host, self.port = u.hostname, u.port
        self.rate = rate
        self.rng = random.Random(seed)
        self.stats_path = stats_path
        self.counts = {k: 0 for k in KINDS}
        self.counts["forwarded"] = 0
        self.lock = threading.Lock()

    def draw(self, path):
        if not path.endswith("completions"):
            return None
        with self.lock:
            if self.rng.random() >= self.rate:
                return None
            kind = KINDS[self.rng.randrange(len(KINDS))]
            self.counts[kind] += 1
            self.save()
            return kind

    def forwarded(self):
        with self.lock:
            self.counts["forwarded"] += 1
            self.save()

    def save(self):
        if self.stats_path:
            with open(self.stats_path + ".tmp", "w") as f:
                json.dump(self.counts, f)
            import os
            os.replace(self.stats_path + ".tmp", self.stats_path)


def relay(request, host, port, method, body):
    """Forwards `request` (a BaseHTTPRequestHandler) to host:port and writes the upstream's
    answer back, whole, with its status and headers (hop-by-hop ones dropped)."""
    conn = http.client.HTTPConnection(host, port, timeout=600)
    headers = {k: v for k, v in request.headers.items()
               if k.lower() not in ("host", "connection", "content-length")}
    conn.request(method, request.path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    request.send_response(resp.status)
    for k, v in resp.getheaders():
        if k.lower() not in ("transfer-encoding", "connection", "content-length"):
            request.send_header(k, v)
    request.send_header("Content-Length", str(len(data)))
    request.end_headers()
    request.wfile.write(data)
    conn.close()


def handler(state):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def reply(self, code, body, headers=()):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def forward(self, method):
            n = int(self.headers.get("Content-Length", "0") or 0)
            body = self.rfile.read(n) if n else None
            kind = state.draw(self.path) if method == "POST" else None
            if kind == "http_500":
                return self.reply(500, {"error": {"message": "injected fault: internal error"}})
            if kind == "http_429_retry_after":
                return self.reply(429, {"error": {"message": "injected fault: rate limited"}},
                                  [("Retry-After", "1")])
            if kind == "dropped_connection":
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if kind == "stall_3s":
                time.sleep(3)
            relay(self, state.host, state.port, method, body)
            state.forwarded()

        def do_GET(self):
            self.forward("GET")

        def do_POST(self):
            self.forward("POST")

        def do_DELETE(self):
            self.forward("DELETE")

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True, help="http://host:port of the endpoint")
    ap.add_argument("--rate", type=float, default=0.2, help="share of generation requests faulted")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--stats", default="", help="JSON file of the fault counts")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    state = State(a.upstream, a.rate, a.seed, a.stats)
    state.save()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), handler(state))
    server.daemon_threads = True
    print(f"fault proxy: listening on http://127.0.0.1:{server.server_address[1]} "
          f"-> {a.upstream} ({a.rate:.0%} of generations faulted)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
