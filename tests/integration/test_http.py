#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""pcmond --http, with real clients on 127.0.0.1: `go tool pprof` scrapes a window of a
published target, Debian's Prometheus scrapes /metrics, curl checks the token, TLS with a
certificate made here, and what is refused (unpublished targets, users' publishing, other
methods, bad windows, a secret file others can read, a public address without a token)."""
import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, Skip, Users, pcmon, pcmon_json, procs, run_tests, workload


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, headers=None, timeout=30):
    """(status, body bytes, content type) of a GET."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers.get("Content-Type", "")


def http_daemon(*more):
    port = free_port()
    return Daemon(args=["--http", port, *more]).start(), port


def stopped_workload(name, *args):
    """@name started stopped: a shell that stops itself and, once continued, execs it."""
    p = subprocess.Popen(["sh", "-c", 'kill -STOP $$; exec "$0" "$@"', workload(name),
                          *map(str, args)], stdout=subprocess.PIPE, text=True)
    for _ in range(200):
        with open(f"/proc/{p.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return p
        time.sleep(0.01)
    raise AssertionError("the workload's shell did not stop")


def go_pprof_raw(url_or_file):
    if not shutil.which("go"):
        raise Skip("go (golang-go) is not installed: make deps")
    env = dict(os.environ, PPROF_TMPDIR=tempfile.mkdtemp(prefix="pcmon-pprof-"))
    p = subprocess.run(["go", "tool", "pprof", "-raw", url_or_file], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout


def raw_samples(text):
    """go tool pprof -raw's samples: [(count, [location ids], {label: value})], and
    {location id: leaf function name}."""
    samples, locs, part = [], {}, None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Samples:"):
            part = "samples"
        elif line.startswith("Locations"):
            part = "locations"
        elif line.startswith("Mappings"):
            part = None
        elif part == "samples":
            m = re.match(r"\s+(\d+)\s+(\d+):((?: \d+)*)\s*$", line)
            if m:
                samples.append([int(m.group(1)), [int(x) for x in m.group(3).split()], {}])
            elif samples and line.strip():
                for k, v in re.findall(r"(\w+):\[([^\]]*)\]", line):
                    samples[-1][2][k] = v
        elif part == "locations":
            m = re.match(r"\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
            if m:
                locs[int(m.group(1))] = m.group(2)
    return samples, locs


def leaf_counts(samples, locs, pid=None):
    out = {}
    for count, ids, labels in samples:
        if pid is not None and labels.get("pid") != str(pid):
            continue
        leaf = locs.get(ids[0], "?") if ids else "?"
        out[leaf] = out.get(leaf, 0) + count
    return out


def test_scrape_window_is_what_the_target_counted_in_it():
    """A workload held stopped until the scrape's window has begun, which ends before the
    window does: go tool pprof over HTTP gets exactly the target's listing, with labels."""
    d, port = http_daemon()
    try:
        sh = stopped_workload("threefn", 1.5)
        tid = pcmon("start", "--pid", sh.pid, "--publish", "--interval", 2000, "--name",
                    "scraped", sock=d.sock, check=0).stdout.strip()
        got = {}
        t = threading.Thread(target=lambda: got.update(
            raw=go_pprof_raw(f"http://127.0.0.1:{port}/debug/pprof/profile?seconds=5&target={tid}")))
        t.start()
        time.sleep(1.5)  # the window has begun (its mark is taken when the request comes)
        os.kill(sh.pid, signal.SIGCONT)
        sh.wait(30)
        t.join(60)
        listing, _ = pcmon_json("list", tid, sock=d.sock)
    finally:
        d.stop()
    samples, locs = raw_samples(got["raw"])
    counts = leaf_counts(samples, locs)
    own = {p["name"]: p["shallow"] for p in listing["procedures"] if p["shallow"]}
    assert sum(counts.values()) == listing["summary"]["counted"], (counts, listing["summary"])
    for fn in ("work_a", "work_b", "work_c"):
        assert counts.get(fn, 0) == own.get(fn, 0) > 0, (fn, counts, own)
    labels = samples[0][2]
    for k in ("host", "target", "pid", "comm", "thread", "kind", "cgroup"):
        assert k in labels, labels
    assert labels["target"] == "scraped" and labels["comm"] == "threefn", labels


def test_windows_overlap_and_each_gets_its_own():
    """Two scrapes at once, one inside the other: each gets what came in its own window."""
    d, port = http_daemon()
    try:
        p = subprocess.Popen([workload("threefn"), "4"], stdout=subprocess.DEVNULL)
        tid = pcmon("start", "--pid", p.pid, "--publish", "--interval", 2000, sock=d.sock,
                    check=0).stdout.strip()
        res = {}

        def scrape(key, secs):
            res[key] = get(f"http://127.0.0.1:{port}/debug/pprof/profile?seconds={secs}&target={tid}")

        long_ = threading.Thread(target=scrape, args=("long", 3))
        long_.start()
        time.sleep(0.5)
        scrape("short", 1)
        long_.join(30)
        p.wait(30)
    finally:
        d.stop()
    n = {}
    for k in ("long", "short"):
        status, body, ctype = res[k]
        assert status == 200 and ctype == "application/octet-stream", (k, status, body[:200])
        f = tempfile.NamedTemporaryFile(suffix=".pb.gz", delete=False)
        f.write(body)
        f.close()
        raw = go_pprof_raw(f.name)
        s, locs = raw_samples(raw)
        n[k] = sum(c for c, _, _ in s)
        n[k + "_s"] = float(re.search(r"^Duration: ([0-9.]+)", raw, re.M).group(1))
    # each its own window: its length, and about its share of the workload's CPU time (the
    # machine's load changes how much the workload gets, alike for both)
    assert abs(n["short_s"] - 1) < 0.3 and abs(n["long_s"] - 3) < 0.3, n
    assert n["short"] > 0 and 1.5 < n["long"] / n["short"] < 6, n


def test_past_windows_from_the_slices_and_the_index():
    """since= is answered at once from the target's time slices (pcmon list --since): the
    flamegraph of the last minute the index links to, and a pprof of the last seconds."""
    d, port = http_daemon()
    base = f"http://127.0.0.1:{port}"
    try:
        p = subprocess.Popen([workload("threefn"), "4"], stdout=subprocess.DEVNULL)
        tid = pcmon("start", "--pid", p.pid, "--publish", "--interval", 2000, "--slices", "1s",
                    "--name", "past", sock=d.sock, check=0).stdout.strip()
        p.wait(30)
        st, index, ctype = get(f"{base}/targets.html")
        link = re.search(rb'href="(/flamegraph\.svg\?target=' + tid.encode() + rb'&amp;since=-1m)"', index)
        assert st == 200 and ctype.startswith("text/html") and link, index
        st, svg, ctype = get(base + link.group(1).decode().replace("&amp;", "&"))
        listing, _ = pcmon_json("list", tid, "--since", "-1m", sock=d.sock)
        st2, body, _ = get(f"{base}/debug/pprof/profile?target=past&since=-1m")
        st3, bad, _ = get(f"{base}/flamegraph.svg?target=past&since=yesterday-ish")
    finally:
        d.stop()
    assert st == 200 and ctype == "image/svg+xml" and svg.startswith(b"<?xml"), (st, ctype, svg[:100])
    total = int(re.search(rb'data-total="(\d+)"', svg).group(1))
    assert total == listing["summary"]["counted"] > 0, (total, listing["summary"])
    assert st2 == 200, (st2, body[:200])
    f = tempfile.NamedTemporaryFile(suffix=".pb.gz", delete=False)
    f.write(body)
    f.close()
    samples, _ = raw_samples(go_pprof_raw(f.name))
    assert sum(c for c, _, _ in samples) == listing["summary"]["counted"]
    assert st3 == 400 and b"--since" in bad, (st3, bad)


def test_prometheus_scrapes_metrics():
    """Debian's Prometheus scrapes /metrics every second; its HTTP API then shows pcmond's
    sample counter growing."""
    if not shutil.which("prometheus"):
        raise Skip("prometheus is not installed: make deps")
    d, port = http_daemon()
    work = tempfile.mkdtemp(prefix="pcmon-prom-")
    prom_port = free_port()
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write(f"global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: pcmond\n"
                f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
    prom = None
    try:
        p = subprocess.Popen([workload("threefn"), "8"], stdout=subprocess.DEVNULL)
        pcmon("start", "--pid", p.pid, "--interval", 1000, "--publish", sock=d.sock, check=0)
        status, body, ctype = get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), (status, ctype)
        check_exposition(body.decode())
        prom = subprocess.Popen(["prometheus", f"--config.file={work}/prometheus.yml",
                                 f"--storage.tsdb.path={work}/data",
                                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        values = []
        deadline = time.time() + 60
        while time.time() < deadline and len(set(values)) < 3:
            time.sleep(1)
            try:
                _, body, _ = get(f"http://127.0.0.1:{prom_port}/api/v1/query?query="
                                 "sum(pcmon_samples_total)", timeout=5)
                r = json.loads(body)["data"]["result"]
            except (OSError, ValueError, KeyError):
                continue
            if r:
                values.append(float(r[0]["value"][1]))
        p.kill()
    finally:
        if prom:
            prom.kill()
            prom.wait()
        d.stop()
        shutil.rmtree(work, ignore_errors=True)
    assert len(values) >= 3 and values == sorted(values) and values[-1] > values[0] > 0, values


def check_exposition(text):
    """The text format: HELP and TYPE before each family's samples, names pcmon_*, counters
    named _total, every sample line NAME{LABELS} VALUE."""
    families, seen = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            families[name] = typ
            continue
        if line.startswith("#"):
            continue
        m = re.match(r'^([a-z_]+)(\{(?:[a-z_]+="(?:[^"\\]|\\.)*",?)*\})? (-?[0-9.e+]+)$', line)
        assert m, line
        name = m.group(1)
        assert name in families and name.startswith("pcmon_"), line
        assert (families[name] == "counter") == name.endswith("_total"), (name, families[name])
        seen.add(name)
    for want in ("pcmon_samples_total", "pcmon_samples_lost_total", "pcmon_drain_seconds_total",
                 "pcmon_samples_unwalkable_total", "pcmon_samples_cut_short_total",
                 "pcmon_resident_memory_bytes", "pcmon_targets", "pcmon_connections",
                 "pcmon_save_errors_total", "pcmon_debuginfod_pending"):
        assert want in seen, (want, sorted(seen))


def test_refusals_and_what_is_never_served():
    """Only published targets are served; a user cannot publish; other methods, bad windows
    and unknown pages are refused with a reason."""
    d, port = http_daemon()
    base = f"http://127.0.0.1:{port}"
    try:
        p = subprocess.Popen(["sleep", "30"])
        hidden = pcmon("start", "--pid", p.pid, sock=d.sock, check=0).stdout.strip()
        st, body, _ = get(f"{base}/debug/pprof/profile?seconds=1&target={hidden}")
        assert st == 404 and b"no published target" in body, (st, body)
        st, body, _ = get(f"{base}/debug/pprof/profile?seconds=1")
        assert st == 404 and b"no target is published" in body, (st, body)
        for q, want in (("seconds=0", 400), ("seconds=301", 400), ("seconds=abc", 400),
                        ("seconds=-5", 400)):
            st, body, _ = get(f"{base}/debug/pprof/profile?{q}")
            assert st == want and b"1 to 300" in body, (q, st, body)
        st, body, _ = get(f"{base}/nothing-here")
        assert st == 404, st
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                            f"{base}/metrics"], capture_output=True, text=True)
        assert r.stdout == "405", r.stdout
        st, body, _ = get(f"{base}/targets.html")
        assert st == 200 and hidden.encode() not in re.sub(rb"<[^>]*>", b" ", body).split(), body
        os.chmod(d.dir, 0o711)  # users reach the socket (0660, group pcmon)
        with Users("pcmon_http_u"):
            r = pcmon("start", "--pid", os.getpid(), "--publish", sock=d.sock,
                      user="pcmon_http_u", groups=True)
            assert r.returncode != 0 and "only root publishes" in r.stderr, (r.returncode, r.stderr)
        p.kill()
    finally:
        d.stop()


def test_an_unpublished_target_is_never_named_or_counted():
    """A target started without --publish, busy beside a published one: no endpoint names
    it, counts it or tells it apart from a target that does not exist. /metrics keeps
    daemon-wide totals only."""
    d, port = http_daemon()
    base = f"http://127.0.0.1:{port}"
    procs = []
    try:
        procs.append(subprocess.Popen([workload("threefn"), "20"], stdout=subprocess.DEVNULL))
        procs.append(subprocess.Popen([workload("spinner"), "20"], stdout=subprocess.DEVNULL))
        hidden = pcmon("start", "--pid", procs[0].pid, "--name", "secretjob", "--interval",
                       1000, sock=d.sock, check=0).stdout.strip()
        shown = pcmon("start", "--pid", procs[1].pid, "--name", "shownjob", "--interval",
                      1000, "--publish", sock=d.sock, check=0).stdout.strip()
        time.sleep(2)
        listing, _ = pcmon_json("list", hidden, sock=d.sock)
        assert listing["summary"]["counted"] > 100, listing["summary"]
        bodies = {}
        for path in ("/", "/targets.html", "/api/targets", "/metrics", "/healthz",
                     "/debug/pprof/profile?seconds=1",
                     "/flamegraph.svg?since=-1m", f"/flamegraph.svg?since=-1m&target={shown}"):
            st, body, _ = get(base + path)
            assert st == 200, (path, st, body[:200])
            if path.startswith("/debug/pprof"):
                body = gzip.decompress(body)
            bodies[path] = body
        # asked for by name or id, it is answered as a target that does not exist
        for want, absent in (("secretjob", "nosuchjob"), (hidden, "250")):
            for page in ("/debug/pprof/profile?seconds=1&target=", "/flamegraph.svg?since=-1m&target=",
                         "/debug/pprof/heap?target="):
                st, body, _ = get(base + page + want)
                st2, body2, _ = get(base + page + absent)
                assert (st, body.replace(want.encode(), b"X")) == \
                    (st2, body2.replace(absent.encode(), b"X")), (page, st, body, st2, body2)
                assert st == 404, (page, st, body)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        d.stop()
    for path, body in bodies.items():
        for secret in (b"secretjob", b"threefn", b"work_a"):
            assert secret not in body, (path, secret)
    metrics = bodies["/metrics"].decode()
    check_exposition(metrics)
    per_target = [line for line in metrics.splitlines() if 'target="' in line]
    assert per_target and all(f'target="{shown}"' in line for line in per_target), per_target
    assert f'target="{hidden}"' not in metrics, metrics


def test_api_views_are_the_engines():
    """/api/targets and a published target's /listing, /timeline, /flame and /diff are what
    pcmon list, timeline and diff answer for the same windows (the flame tree's total is the
    listing's count); an unpublished target is answered as one that does not exist; bad
    arguments are refused with 400 and a reason."""
    d, port = http_daemon()
    base = f"http://127.0.0.1:{port}/api/targets"
    procs_ = []
    try:
        procs_.append(subprocess.Popen([workload("threefn"), "5"], stdout=subprocess.DEVNULL))
        procs_.append(subprocess.Popen([workload("spinner"), "5"], stdout=subprocess.DEVNULL))
        shown = pcmon("start", "--pid", procs_[0].pid, "--name", "shownjob", "--interval",
                      1000, "--slices", "1s", "--publish", sock=d.sock, check=0).stdout.strip()
        hidden = pcmon("start", "--pid", procs_[1].pid, "--name", "secretjob", sock=d.sock,
                       check=0).stdout.strip()
        for p in procs_:
            p.wait()
        t = pcmon_json("list", shown, sock=d.sock)[0]["target"]
        t0 = int(t["start_wall"]) + 1
        t1, t2 = t0 + 2, t0 + 4
        st, body, ctype = get(base)
        assert st == 200 and ctype == "application/json", (st, body[:200])
        ts = json.loads(body)["targets"]
        assert [x["name"] for x in ts] == ["shownjob"] and b"secretjob" not in body, ts
        win = f"since=@{t0}&until=@{t2}"
        st, body, _ = get(f"{base}/{shown}/listing?{win}")
        want = pcmon_json("list", shown, "--since", f"@{t0}", "--until", f"@{t2}",
                          sock=d.sock)[0]
        got = json.loads(body)
        assert st == 200 and got["procedures"] == want["procedures"], (st, body[:300])
        assert got["summary"] == want["summary"]
        st, body, _ = get(f"{base}/{shown}/timeline?{win}&top=3")
        want = pcmon_json("timeline", shown, "--since", f"@{t0}", "--until", f"@{t2}",
                          "--top", "3", sock=d.sock)[0]
        assert st == 200 and json.loads(body)["timeline"] == want["timeline"], body[:300]
        st, body, _ = get(f"{base}/{shown}/flame?{win}")
        flame = json.loads(body)["flame"]
        counted = pcmon_json("list", shown, "--since", f"@{t0}", "--until", f"@{t2}",
                             sock=d.sock)[0]["summary"]["counted"]
        assert st == 200 and flame["total"] == counted and flame["root"]["c"], flame["total"]
        st, body, _ = get(f"{base}/{shown}/diff?a=@{t0}..@{t1}&b=@{t1}..@{t2}")
        want = pcmon_json("diff", f"{shown}@@{t0}..@{t1}", f"{shown}@@{t1}..@{t2}",
                          sock=d.sock)[0]
        got = json.loads(body)
        assert st == 200 and got["diff"]["procedures"] == want["procedures"], body[:300]
        assert got["flame"]["total_a"] == want["a"]["samples"], (got["flame"]["total_a"], want["a"])
        st, body, _ = get(f"{base}/{shown}/lines?proc=threefn.work_a&{win}")
        want = pcmon_json("list", shown, "--lines", "threefn.work_a", "--since", f"@{t0}",
                          "--until", f"@{t2}", sock=d.sock)[0]
        assert st == 200 and json.loads(body)["lines"] == want["lines"], body[:300]
        # an unpublished target is one that does not exist; bad arguments say why
        for view in ("listing", "flame", "timeline"):
            a = get(f"{base}/{hidden}/{view}")
            b = get(f"{base}/250/{view}")
            assert a[0] == 404 and a[1].replace(hidden.encode(), b"X") == \
                b[1].replace(b"250", b"X"), (a, b)
        for path, code in ((f"/{shown}/nope", 404), (f"/x/listing", 404),
                           (f"/{shown}/listing?since=" + "9" * 40, 400),
                           (f"/{shown}/flame?nodes=0", 400), (f"/{shown}/diff?a=-1m", 400),
                           (f"/{shown}/lines", 400),
                           (f"/{shown}/listing?since=yesterday", 400)):
            st, body, _ = get(base + path)
            assert st == code and body.strip() and b"\n" not in body.strip(), (path, st, body)
    finally:
        for p in procs_:
            if p.poll() is None:
                p.kill()
        d.stop()


def test_heap_of_a_published_target():
    """/debug/pprof/heap: a published target's allocations (--alloc) now, as a Go heap
    profile that `go tool pprof` reads from the URL, its live bytes the listing's; linked
    from the index; a target that watches no allocations says so."""
    d, port = http_daemon()
    base = f"http://127.0.0.1:{port}"
    w = subprocess.Popen([workload("allocs"), "2"], stdout=subprocess.PIPE, text=True)
    try:
        tid = pcmon("start", "--pid", w.pid, "--alloc", "--publish", "--no-sample",
                    sock=d.sock, check=0).stdout.strip()
        w.wait()
        alloc = pcmon_json("list", tid, sock=d.sock)[0]["alloc"]
        st, body, kind = get(f"{base}/debug/pprof/heap?target={tid}")
        assert st == 200 and kind == "application/octet-stream", (st, body[:300])
        raw = go_pprof_raw(f"{base}/debug/pprof/heap?target={tid}")
        assert "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes" in raw, \
            raw[:500]
        # each sample's four values, then its locations: inuse_space summed is the listing's
        inuse = 0
        for line in raw.split("Samples:", 1)[1].split("Locations", 1)[0].splitlines():
            m = re.match(r"\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+):", line)
            if m:
                inuse += int(m.group(4))
        assert abs(inuse - alloc["summary"]["inuse_bytes"]) <= len(alloc["procedures"]) + 2, \
            (inuse, alloc["summary"])
        # since=: what was allocated since then (here its whole life), live now; no seconds=
        start = int([t for t in pcmon_json("targets", sock=d.sock)[0]["targets"]
                     if str(t["id"]) == str(tid)][0]["start_wall"]) - 1
        raw = go_pprof_raw(f"{base}/debug/pprof/heap?target={tid}&since=@{start}")
        got = [0, 0]
        for line in raw.split("Samples:", 1)[1].split("Locations", 1)[0].splitlines():
            m = re.match(r"\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+):", line)
            if m:
                got[0] += int(m.group(2))
                got[1] += int(m.group(4))
        win = pcmon_json("list", tid, "--since", f"@{start}", sock=d.sock)[0]["alloc"]["summary"]
        assert abs(got[0] - win["alloc_bytes"]) <= len(alloc["procedures"]) + 2, (got, win)
        assert abs(got[1] - win["inuse_bytes"]) <= len(alloc["procedures"]) + 2, (got, win)
        st, body, _ = get(f"{base}/debug/pprof/heap?target={tid}&seconds=5")
        assert st == 400, (st, body)
        st, body, _ = get(base + "/targets.html")
        assert f"/debug/pprof/heap?target={tid}".encode() in body, body
        other = pcmon("start", "--pid", os.getpid(), "--publish", sock=d.sock,
                      check=0).stdout.strip()
        st, body, _ = get(f"{base}/debug/pprof/heap?target={other}")
        assert st == 400 and b"watches no allocations" in body, (st, body)
    finally:
        if w.poll() is None:
            w.kill()
        d.stop()


def test_token_and_tls():
    """A token file must be private; with one, a request without the token is refused; a
    public address needs token and TLS; HTTPS with a certificate made here works with curl
    --cacert."""
    work = tempfile.mkdtemp(prefix="pcmon-tls-")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write("s3cret-token-for-the-test\n")
    os.chmod(token, 0o644)
    port = free_port()
    # a token file others can read: pcmond does not start, and says what to do
    d = Daemon(args=["--http", port, "--http-token-file", token])
    try:
        d.start()
        raise AssertionError("pcmond started with a token file others can read")
    except AssertionError as e:
        assert "chmod 600" in str(e), e
    finally:
        d.stop()
    os.chmod(token, 0o600)
    d = Daemon(args=["--http", f"0.0.0.0:{port}", "--http-token-file", token])
    try:
        d.start()
        raise AssertionError("pcmond served a public address without TLS")
    except AssertionError as e:
        assert "needs a token" in str(e) and "TLS" in str(e), e
    finally:
        d.stop()
    key, cert = os.path.join(work, "key.pem"), os.path.join(work, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    os.chmod(key, 0o600)
    d = Daemon(args=["--http", f"127.0.0.1:{port}", "--http-token-file", token,
                     "--http-tls-cert", cert, "--http-tls-key", key]).start()
    try:
        def curl(*args):
            return subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                   "--cacert", cert, *args], capture_output=True, text=True).stdout
        assert curl(f"https://127.0.0.1:{port}/healthz") == "401"
        assert curl("-H", "Authorization: Bearer wrong", f"https://127.0.0.1:{port}/healthz") == "401"
        assert curl("-H", "Authorization: Bearer s3cret-token-for-the-test",
                    f"https://127.0.0.1:{port}/healthz") == "200"
        # the page, its files and its API: the same rule
        for path in ("/", "/app.js", "/api/targets"):
            assert curl(f"https://127.0.0.1:{port}{path}") == "401", path
            assert curl("-H", "Authorization: Bearer s3cret-token-for-the-test",
                        f"https://127.0.0.1:{port}{path}") == "200", path
        # not HTTPS: no answer
        assert curl(f"http://127.0.0.1:{port}/healthz") in ("000", "400")
    finally:
        d.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run_tests(globals())
