#!/usr/bin/env python3
"""A latency-adding HTTP proxy for bench/trainer/async_bench.py, in front of an OpenAI-compatible
endpoint (`allot serve`).

Every generation request (POST .../completions) waits --delay-ms before it is forwarded, in its
own thread, so concurrent requests wait side by side, as against a remote endpoint whose latency
is D ms more than the local server's. Everything else (adapter loads, /health, /v1/models)
passes untouched. Each generation request's interval (wall-clock start and end, seconds since
the epoch, as seen by the proxy: the delay included) is appended to --log as one line
"START END"; the bench reads the endpoint's busy and idle time from them.
"""
import argparse
import http.server
import os
import sys
import threading
import time
import urllib.parse

# The forwarding is the chaos suite's fault proxy's (tests/chaos/fault_proxy.py).
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "chaos"))
from fault_proxy import relay  # noqa: E402


class State:
    def __init__(self, upstream, delay_s, log_path):
        u = urllib.parse.urlparse(upstream)
        self.host, self.port = u.hostname, u.port
        self.delay_s = delay_s
        self.log = open(log_path, "a", buffering=1) if log_path else None
        self.lock = threading.Lock()

    def record(self, start, end):
        if self.log:
            with self.lock:
                self.log.write(f"{start:.6f} {end:.6f}\n")


def handler(state):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def forward(self, method):
            start = time.time()
            n = int(self.headers.get("Content-Length", "0") or 0)
            body = self.rfile.read(n) if n else None
            generation = method == "POST" and self.path.rstrip("/").endswith("completions")
            if generation and state.delay_s > 0:
                time.sleep(state.delay_s)
            relay(self, state.host, state.port, method, body)
            if generation:
                state.record(start, time.time())

        def do_GET(self):
            self.forward("GET")

        def do_POST(self):
            self.forward("POST")

        def do_DELETE(self):
            self.forward("DELETE")

    return Handler


def busy_seconds(intervals, lo, hi):
    """Seconds of [lo, hi] with at least one interval in flight (the union of the intervals)."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in intervals):
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True, help="http://host:port of the endpoint")
    ap.add_argument("--delay-ms", type=float, default=0.0,
                    help="milliseconds added to every generation request")
    ap.add_argument("--log", default="", help="file of generation intervals (appended)")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    state = State(a.upstream, a.delay_ms / 1000.0, a.log)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), handler(state))
    server.daemon_threads = True
    print(f"delay proxy: listening on http://127.0.0.1:{server.server_address[1]} "
          f"-> {a.upstream} (+{a.delay_ms:g} ms per generation)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
