#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""pcmond's page (docs/fleet.md, "The page"), in Debian's Chromium, headless, against a real
pcmond serving a published target: the page loads from pcmond alone, the flame graph's
frames are the listing's, a search says the share the listing gives, names show as text."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import ROOT, Daemon, Skip, pcmon, pcmon_json, run_tests, workload  # noqa: E402
from test_http import free_port, get  # noqa: E402


def chromium_dom(url, wait_ms=8000):
    """The DOM once the page's script ran (Chromium's virtual time: fetches included)."""
    if not shutil.which("chromium"):
        raise Skip("chromium is not installed: make deps")
    p = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        f"--virtual-time-budget={wait_ms}", "--enable-logging=stderr",
                        "--v=0", "--dump-dom", url],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    errors = [l for l in p.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l or
              "Content Security Policy" in l]
    return p.stdout, errors


def test_page_draws_the_listing():
    """/#t=ID&q=RE: the page comes from pcmond (its files built in, a strict CSP), lists the
    published target, draws the flame graph whose outermost frames' widths are the listing's
    deep counts, and the search's matched share is the listing's deep share of the match."""
    port = free_port()
    d = Daemon(args=["--http", port]).start()
    try:
        p = subprocess.Popen([workload("threefn"), "3"], stdout=subprocess.DEVNULL)
        tid = pcmon("start", "--pid", p.pid, "--name", "webjob", "--interval", 1000,
                    "--publish", sock=d.sock, check=0).stdout.strip()
        p.wait()
        time.sleep(1.5)  # (its exit seen: the target stays as it is from now on)
        base = f"http://127.0.0.1:{port}"
        st, page, ctype = get(base + "/")
        assert st == 200 and ctype.startswith("text/html") and b"/app.js" in page, page[:200]
        dom, errors = chromium_dom(f"{base}/#t={tid}&q=^work_a$")
        assert not errors, errors
        assert 'data-ready="1"' in dom, dom[:2000]
        assert re.search(r'<tr class="target" data-id="%s">' % tid, dom), dom[:2000]
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        deep = {r["name"]: r["deep"] for r in listing["procedures"]}
        frames = re.findall(r'<g class="f[^"]*" data-name="([^"]*)" data-v="(\d+)"', dom)
        assert frames, dom[:3000]
        got = {}
        for name, v in frames:
            got.setdefault(name, int(v))  # (a procedure's first frame: its outermost)
        for name in ("work_a", "work_b", "work_c"):
            assert got.get(name) == deep[name], (name, got.get(name), deep[name])
        m = re.search(r'id="matched" data-matched="([\d.]+)"', dom)
        want = 100 * deep["work_a"] / listing["summary"]["counted"]
        assert m and abs(float(m.group(1)) - want) < 0.01, (m and m.group(0), want)
        assert re.search(r'<tr data-name="work_a">', dom), "the listing's rows"
    finally:
        assert d.stop() == 0, d.logtext()[-3000:]  # (pcmond-asan: no leak, no error)


def test_page_shows_calls_and_legs():
    """A target that counts calls, times legs and keeps a leg's tail: the page shows each of
    their tables (calls, nodes, legs, the tail's procedures) as pcmon list --json has them,
    by their first column."""
    port = free_port()
    d = Daemon(args=["--http", port]).start()
    try:
        # (it spins until stopped: on a loaded machine, calibrating the probes before they are
        # attached took longer than a spinner of 6 s lived, and its procedures were not found)
        c = subprocess.Popen([workload("spinner"), "120", "2000"], stdout=subprocess.PIPE)
        c.stdout.readline()  # (it runs: its objects are mapped)
        cid = pcmon("start", "--pid", c.pid, "--name", "probed", "--count", "spinner.spin_here",
                    "--node", "spinner.spin_here", "--node", "spinner.spin_here%return",
                    "--leg", "1:2", "--tail", "1:1us", "--publish", sock=d.sock,
                    check=0).stdout.strip()
        time.sleep(4)
        c.terminate()
        c.wait()
        time.sleep(1.5)
        dom, errors = chromium_dom(f"http://127.0.0.1:{port}/#t={cid}")
        assert not errors and 'data-ready="1"' in dom, (errors, dom[:1000])
        doc = pcmon_json("list", cid, sock=d.sock)[0]
        for sec in ("calls.procedures", "tables.nodes", "tables.legs", "tails.0.procedures"):
            rows = doc
            for part in sec.split("."):
                rows = rows[int(part)] if part.isdigit() else rows[part]
            first = next(k for k, v in rows[0].items() if not isinstance(v, (dict, list)))
            m = re.search(r'<table data-section="%s">(.*?)</table>' % re.escape(sec), dom, re.S)
            assert m, (sec, dom[-3000:])
            cells = re.findall(r"<tr><td[^>]*>([^<]*)</td>", m.group(1))
            want = [str(r[first]).lower() if isinstance(r[first], bool) else str(r[first])
                    for r in rows[:100]]
            assert cells == want, (sec, cells, want)
    finally:
        assert d.stop() == 0, d.logtext()[-3000:]


WEB = os.path.join(os.path.dirname(__file__), "..", "web")
MARKUP = os.path.join(os.path.dirname(__file__), "..", "workloads", "python", "pymarkup.py")


def test_page_in_a_browser_driven():
    """Playwright (playwright-core, on Debian's Chromium): the outermost frames are the
    listing's deep counts; a search says the listing's share; a procedure's lines add up to
    its count; a window dragged on the
    timeline lists what pcmon list lists for it; two windows set as A and B are coloured as
    pcmon diff calls each procedure; a procedure named as markup shows as text, and its
    markup does not run. Screenshots of the flame graph and the diff go to docs/."""
    if not shutil.which("node") or not os.path.isdir(os.path.join(WEB, "node_modules",
                                                                   "playwright-core")):
        raise Skip("node or tests/web's playwright-core is missing: make deps")
    if not shutil.which("chromium"):
        raise Skip("chromium is not installed: make deps")
    port = free_port()
    d = Daemon(args=["--http", port]).start()
    try:
        # a service whose gamma_ stops being called half way: A and B differ beyond noise
        p = subprocess.Popen([workload("service"), "8", "busy", "remove", "4"],
                             stdout=subprocess.DEVNULL)
        tid = pcmon("start", "--pid", p.pid, "--name", "webjob", "--interval", 1000,
                    "--slices", "1s", "--publish", sock=d.sock, check=0).stdout.strip()
        x = subprocess.Popen(["python3.11", MARKUP, "2"], stdout=subprocess.DEVNULL)
        xid = pcmon("start", "--pid", x.pid, "--name", "markup", "--interval", 1000,
                    "--publish", sock=d.sock, check=0).stdout.strip()
        a = subprocess.Popen([workload("allocs"), "2"], stdout=subprocess.DEVNULL)
        aid = pcmon("start", "--pid", a.pid, "--name", "heap", "--alloc", "--alloc-rate", 65536,
                    "--publish", sock=d.sock, check=0).stdout.strip()
        a.wait()
        p.wait()
        x.wait()
        time.sleep(1.5)
        shots = os.environ.get("PCMON_WEB_SHOTS", d.dir)  # (docs/web-*.png: this with
        # PCMON_WEB_SHOTS=docs)
        r = subprocess.run(["node", os.path.join(WEB, "check.mjs"), f"http://127.0.0.1:{port}",
                            tid, xid, shots, aid], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        got = json.loads(r.stdout.strip().splitlines()[-1])
        assert not got["errors"], got["errors"]
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        deep = {q["name"]: q["deep"] for q in listing["procedures"]}
        for name in ("alpha", "beta", "gamma_"):
            assert got["frames"].get(name) == deep[name], (name, got["frames"], deep)
        want = 100 * deep["alpha"] / listing["summary"]["counted"]
        assert abs(got["matched"] - want) < 0.01, (got["matched"], want)
        # a frame zoomed spans the graph, and reset; callers: the innermost frames first,
        # each as wide as its shallow count; a column sorted
        assert got["zoomed_total"] == got["frames"]["handle"], got["zoomed_total"]
        assert got["reset_total"] == listing["summary"]["counted"], got["reset_total"]
        shallow = {q["name"]: q["shallow"] for q in listing["procedures"]}
        assert got["inverted_top"].get("alpha") == shallow["alpha"], got["inverted_top"]
        assert got["sorted_first"] == max(shallow, key=shallow.get), got["sorted_first"]
        # the timeline follows the hottest procedures; a procedure's lines add up to it
        assert "alpha" in got["legend"], got["legend"]
        assert got["lines_count"] == deep["alpha"] == got["lines_sum"], \
            (got["lines_count"], got["lines_sum"], deep["alpha"])
        since, until = got["a"]
        win = pcmon_json("list", tid, "--since", since, "--until", until, sock=d.sock)[0]
        assert got["window_total"] == win["summary"]["counted"], (got["a"], win["summary"])
        diff = pcmon_json("diff", f"{tid}@{got['a'][0]}..{got['a'][1]}",
                          f"{tid}@{got['b'][0]}..{got['b'][1]}", sock=d.sock)[0]
        want = {q["procedure"]: q["change"] if q["significant"] else "same"
                for q in diff["procedures"]}
        assert got["diff"] == want, (got["diff"], want)
        assert "shrank" in want.values(), want  # (gamma_, or the phase it was in)
        for name, change in got["diff_frames"].items():  # the flame graph says the same
            assert change == want.get(name, "same"), (name, change, want.get(name))
        print(f"  frames {got['frames']}, matched {got['matched']} %, A {got['a']}, "
              f"B {got['b']}, diff {got['diff']}")
        # another instrument's section (the allocations'): its table as pcmon list --alloc
        # --json has it, by its first column
        rows = pcmon_json("list", aid, "--alloc", sock=d.sock)[0]["alloc"]["procedures"]
        first = next(k for k, v in rows[0].items() if not isinstance(v, (dict, list)))
        cells = [str(r[first]) for r in rows[:100]]
        assert got["sections"][aid].get("alloc.procedures") == cells, (got["sections"], cells)
        assert any("<img" in n for n in got["xss_names"]), got["xss_names"]
        assert got["xss_imgs"] == 0 and not got["pwned"], got
    finally:
        assert d.stop() == 0, d.logtext()[-3000:]  # (pcmond-asan: no leak, no error)


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
