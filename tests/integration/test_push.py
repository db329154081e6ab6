#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""pcmond --push (Grafana Pyroscope's ingest API) and --otlp (OTLP/HTTP profiles), received
here by a small HTTP server of the test's own (no Pyroscope server is packaged): the query
parameters Pyroscope reads, the pprof bodies decoded by `go tool pprof`, the OTLP bodies by
`protoc --decode`, and the windows adding up to the target's listing; a receiver that never
answers changes nothing but pcmond's counters."""
import gzip
import http.server
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, pcmon, pcmon_json, run_tests
from test_http import free_port, go_pprof_raw, raw_samples, stopped_workload
from test_otlp import FLEET, REQUEST, one, parse_text


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps every POST (path, query, headers, body) and
    answers 200, or (hang=True) never answers."""

    def __init__(self, hang=False):
        self.got, self.hang, self.release = [], hang, threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                url = urllib.parse.urlsplit(self.path)
                outer.got.append({"path": url.path, "query": dict(urllib.parse.parse_qsl(url.query)),
                                  "headers": dict(self.headers), "body": body})
                if outer.hang:
                    outer.release.wait(60)
                    return
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.port = free_port()
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.srv.daemon_threads = True
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self):
        self.release.set()
        self.srv.shutdown()
        self.srv.server_close()


def push_status(d):
    return pcmon_json("status", sock=d.sock)[0].get("push", {})


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def otlp_total(body):
    dec = subprocess.run(["protoc", f"--decode={REQUEST}", "-I", FLEET,
                          os.path.join(FLEET, "otlp_profiles.proto")],
                         input=body, capture_output=True, timeout=60)
    assert dec.returncode == 0, dec.stderr
    req = parse_text(dec.stdout.decode())
    sp = one(one(req, "resource_profiles", {}), "scope_profiles", {})
    counts = sp["profiles"][0]
    return sum(one(s, "values") for s in counts.get("samples", []))


def test_windows_pushed_to_pyroscope_and_otlp_add_up_to_the_listing():
    """A published target whose workload runs only after its first window began: the
    windows pushed add up to its listing, in each format, with Pyroscope's parameters."""
    rx = Receiver()
    d = Daemon(args=["--push", rx.url + "/", "--otlp", rx.url, "--push-interval", 2]).start()
    try:
        sh = stopped_workload("threefn", 1.5)
        tid = pcmon("start", "--pid", sh.pid, "--publish", "--interval", 2000, "--name",
                    "pushed", sock=d.sock, check=0).stdout.strip()
        wait_for(lambda: push_status(d).get("targets", 0) >= 1, 20, "the first window")
        t0 = time.time()
        os.kill(sh.pid, signal.SIGCONT)
        sh.wait(30)
        listing, _ = pcmon_json("list", tid, sock=d.sock)
        # every sample's window cut and sent: two ticks after the last sample
        time.sleep(4.5)
        wait_for(lambda: push_status(d).get("queued", 1) == 0, 30, "the queue to empty")
        st = push_status(d)
    finally:
        d.stop()
        rx.close()
    counted = listing["summary"]["counted"]
    assert counted > 0, listing["summary"]
    pyro = [g for g in rx.got if g["path"] == "/ingest"]
    otlp = [g for g in rx.got if g["path"] == "/v1development/profiles"]
    assert pyro and otlp and len(rx.got) == len(pyro) + len(otlp), [g["path"] for g in rx.got]
    assert st["sent"] == len(rx.got) and st["failed"] == st["dropped"] == 0, st
    total = 0
    for g in pyro:
        q = g["query"]
        assert q["format"] == "pprof" and q["spyName"] == "pcmon" and q["sampleRate"] == "500", q
        assert q["name"].startswith("pcmon.pushed{host=") and "target=pushed}" in q["name"], q
        assert t0 - 10 <= int(q["from"]) <= int(q["until"]) <= time.time() + 1, (q, t0)
        f = tempfile.NamedTemporaryFile(suffix=".pb.gz", delete=False)
        f.write(g["body"])
        f.close()
        samples, _ = raw_samples(go_pprof_raw(f.name))
        os.unlink(f.name)
        total += sum(c for c, _, labels in samples if labels.get("target") == "pushed")
    assert total == counted, (total, counted, len(pyro))
    total = 0
    for g in otlp:
        h = {k.lower(): v for k, v in g["headers"].items()}
        assert h["content-type"] == "application/x-protobuf" and h["content-encoding"] == "gzip", h
        total += otlp_total(gzip.decompress(g["body"]))
    assert total == counted, (total, counted, len(otlp))


def test_a_receiver_that_never_answers_changes_only_counters():
    """Pushes to a receiver that takes the request and never answers: sampling and the
    socket go on as before; the push counters say what happened."""
    rx = Receiver(hang=True)
    d = Daemon(args=["--push", rx.url, "--push-interval", 1]).start()
    try:
        p = subprocess.Popen([os.path.join(os.path.dirname(__file__), "..", "..", ".output",
                                           "workloads", "threefn"), "14"],
                             stdout=subprocess.DEVNULL)
        tid = pcmon("start", "--pid", p.pid, "--publish", "--interval", 2000, sock=d.sock,
                    check=0).stdout.strip()
        wait_for(lambda: push_status(d).get("retries", 0) >= 1, 40, "a retry")
        t = time.time()
        listing, _ = pcmon_json("list", tid, sock=d.sock)
        took = time.time() - t
        st = push_status(d)
        p.kill()
    finally:
        d.stop()
        rx.close()
    s = listing["summary"]
    assert s["counted"] > 1000 and s["lost"] == 0, s
    assert took < 5, took
    assert st["windows"] >= 2 and st["sent"] == 0 and st["queued"] >= 1, st


if __name__ == "__main__":
    run_tests(globals())
