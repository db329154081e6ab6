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
from test_otlp import FLEET, REQUEST, Dict, one, parse_text


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


def otlp_by_target(body):
    """{target name: samples} of one OTLP body, from each sample's pcmon.target."""
    dec = subprocess.run(["protoc", f"--decode={REQUEST}", "-I", FLEET,
                          os.path.join(FLEET, "otlp_profiles.proto")],
                         input=gzip.decompress(body), capture_output=True, timeout=60)
    assert dec.returncode == 0, dec.stderr
    req = parse_text(dec.stdout.decode())
    d = Dict(req)
    out = {}
    for rp in req.get("resource_profiles", []):
        for sp in rp.get("scope_profiles", []):
            for smp in sp["profiles"][0].get("samples", []):  # (the second: nanoseconds)
                name = d.attrs(smp.get("attribute_indices", [])).get("pcmon.target", "?")
                out[name] = out.get(name, 0) + one(smp, "values")
    return out


def pyroscope_by_target(g):
    """{target name: samples} of one Pyroscope ingest body (go tool pprof -raw)."""
    f = tempfile.NamedTemporaryFile(suffix=".pb.gz", delete=False)
    f.write(g["body"])
    f.close()
    try:
        samples, _ = raw_samples(go_pprof_raw(f.name))
    finally:
        os.unlink(f.name)
    out = {}
    for c, _, labels in samples:
        out[labels.get("target", "?")] = out.get(labels.get("target", "?"), 0) + c
    return out


def received(rx):
    """Samples received per target: ({name: Pyroscope total}, {name: OTLP total})."""
    pyro, otlp = {}, {}
    for g in rx.got:
        got = pyroscope_by_target(g) if g["path"] == "/ingest" else otlp_by_target(g["body"])
        into = pyro if g["path"] == "/ingest" else otlp
        for k, v in got.items():
            into[k] = into.get(k, 0) + v
    return pyro, otlp


def frozen(p):
    """Wait until process @p (one thread) is stopped and off its CPU: it adds no sample after.
    Its state reads T as soon as it has stopped itself, a few microseconds before it leaves
    the CPU, where a tick can still sample it; its wait channel is read only once it left."""
    for _ in range(500):
        with open(f"/proc/{p.pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{p.pid}/wchan") as f:
            wchan = f.read().strip()
        if state == "T" and wchan not in ("", "0"):
            return
        time.sleep(0.01)
    raise AssertionError(f"pid {p.pid} did not stop")


def test_every_sample_pushed_exactly_once():
    """Published targets of every fate, started at once with no wait for a window: one that
    runs across several intervals and exits, one that exits before the first interval ends,
    one stopped, one dropped while it runs, one zeroed, and one still running when pcmond
    stops (SIGTERM). Each receiver gets every sample of each exactly once: the sum over all
    bodies is the listing's count (the last one's, from its saved results)."""
    rx = Receiver()
    state = tempfile.mkdtemp(prefix="pcmon-push-state-")
    args = ["--push", rx.url, "--otlp", rx.url, "--push-interval", 3]
    wl = os.path.join(os.path.dirname(__file__), "..", "..", ".output", "workloads", "threefn")
    d = Daemon(state_dir=state, args=args).start()
    counted, procs = {}, {}

    def start(name, secs):
        procs[name] = subprocess.Popen([wl, str(secs)], stdout=subprocess.DEVNULL)
        return pcmon("start", "--pid", procs[name].pid, "--publish", "--interval", 2000,
                     "--name", name, sock=d.sock, check=0).stdout.strip()

    def count(tid, daemon=None):
        return pcmon_json("list", tid, sock=(daemon or d).sock)[0]["summary"]["counted"]

    try:
        ids = {n: start(n, s) for n, s in
               (("long", 7), ("short", 0.4), ("stopped", 20), ("dropped", 20), ("zeroed", 20),
                ("last", 30))}
        procs["short"].wait(30)
        time.sleep(1.5)  # the short one's samples are all in before a window ended
        counted["short"] = count(ids["short"])
        time.sleep(3)
        pcmon("stop", ids["stopped"], sock=d.sock, check=0)
        counted["stopped"] = count(ids["stopped"])
        procs["stopped"].kill()
        # a running target dropped: frozen first, so that its count is final when taken
        os.kill(procs["dropped"].pid, signal.SIGSTOP)
        frozen(procs["dropped"])
        counted["dropped"] = count(ids["dropped"])
        pcmon("drop", ids["dropped"], sock=d.sock, check=0)
        procs["dropped"].kill()
        # zeroed: what came before is sent, and what comes after
        os.kill(procs["zeroed"].pid, signal.SIGSTOP)
        frozen(procs["zeroed"])
        before_zero = count(ids["zeroed"])
        pcmon("zero", ids["zeroed"], sock=d.sock, check=0)
        os.kill(procs["zeroed"].pid, signal.SIGCONT)
        procs["long"].wait(60)
        counted["long"] = count(ids["long"])
        time.sleep(1)
        # killed, it runs once more (its exit, which can be sampled): counted once it is gone
        procs["zeroed"].kill()
        procs["zeroed"].wait(30)
        counted["zeroed"] = before_zero + count(ids["zeroed"])
        assert all(counted[n] > 0 for n in counted), counted
        # "last" is sampled until pcmond stops: its count is what pcmond saved
        assert d.stop() == 0, d.logtext()
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        d.stop()
    log = d.logtext()
    d2 = Daemon(state_dir=state).start()
    try:
        counted["last"] = count(ids["last"], d2)
    finally:
        d2.stop()
        rx.close()
    assert counted["last"] > 0, counted
    pyro, otlp = received(rx)
    assert "all" in log and "windows sent" in log, log
    assert pyro == counted, ("Pyroscope", pyro, counted, log)
    assert otlp == counted, ("OTLP", otlp, counted, log)


if __name__ == "__main__":
    run_tests(globals())
