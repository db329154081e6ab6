#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Exports and views (docs/exports.md): pprof read by go tool pprof, folded stacks, the flamegraph
SVG rendered by headless Chromium, and top driven in tmux."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, pcmon, pcmon_json, run_tests, workload

NODAEMON = "/nonexistent/pcmond.sock"


def profiled(*opts, work="crit", secs=2):
    """A daemon with one finished target: (daemon, target id, its listing)."""
    d = Daemon().start()
    try:
        listing, _ = pcmon_json("run", "--interval", 1000, *opts, "--", workload(work), secs,
                                sock=d.sock)
    except BaseException:
        d.stop()
        raise
    return d, str(listing["target"]["id"]), listing


def go_pprof(*args):
    env = dict(os.environ, HOME=os.environ.get("HOME", "/root"), GOFLAGS="-mod=mod")
    p = subprocess.run(["go", "tool", "pprof", *args], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout


def pprof_top(path, index="samples"):
    """{function: (flat, cum)} from go tool pprof -top, every node kept."""
    out = go_pprof("-top", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0",
                   f"-sample_index={index}", path)
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+\S+%\s+\S+%\s+(\d+)\s+\S+%\s+(.*)$", line)
        if m:
            # pprof marks a function met inlined "(inline)", and met both ways "(partial-inline)"
            name = re.sub(r" \((partial-)?inline\)$", "", m.group(3).strip())
            flat, cum = rows.get(name, (0, 0))
            rows[name] = (flat + int(m.group(1)), max(cum, int(m.group(2))))
    total = int(re.search(r"Total samples = (\d+)", out).group(1)) if "Total samples" in out \
        else None
    return rows, total, out


def unique_names(listing):
    """Procedures by their bare name, for those whose bare name no other module has."""
    by = {}
    for p in listing["procedures"]:
        # code named from its CFI carries its module, as in the export
        bare = p["module"] + p["name"] if p["name"].startswith("+0x") else p["name"]
        by.setdefault(bare, []).append(p)
    return {k: v[0] for k, v in by.items() if len(v) == 1}


def test_pprof_shares_equal_the_listing():
    d, tid, _ = profiled("--kernel")
    try:
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        out = os.path.join(d.dir, "p.pb.gz")
        pcmon("export", tid, "--format", "pprof", "-o", out, sock=d.sock, check=0)
        with open(out, "rb") as f:
            assert f.read(2) == b"\x1f\x8b"  # gzipped
        rows, total, text = pprof_top(out)
        counted = listing["summary"]["counted"]
        assert total == counted, (total, counted)
        assert "File: crit" in text, text[:300]  # the program is the first mapping
        compared = 0
        for bare, p in unique_names(listing).items():
            if bare not in rows:
                assert p["shallow"] == 0 and p["deep"] == 0, (bare, p, text)
                continue
            flat, cum = rows[bare]
            # equal counts: equal shares, to any precision
            assert (flat, cum) == (p["shallow"], p["deep"]), (bare, rows[bare], p)
            compared += 1
        assert compared >= 5, compared
        for c in listing["summary"]["critical"]:
            if c["count"]:
                assert rows[f"[critical:{c['name']}]"][0] == c["count"], (c, rows)
        # a kernel frame and an inlined function, each with its line
        assert any(p["module"] == "kernel" and p["deep"] for p in listing["procedures"])
        assert "calibrate (inline)" in text, text
        raw = go_pprof("-raw", out)
        assert re.search(r"\[kernel\.kallsyms\]", raw), raw[:2000]
        assert re.search(r"/crit [0-9a-f]{40} \[FN\]\[FL\]\[LN\]\[IN\]", raw), raw[:2000]
        assert re.search(r"time_nanos|Time:", go_pprof("-top", out))
        traces = go_pprof("-traces", out)
        assert re.search(r"kind:\s+on-cpu", traces) and re.search(r"pid:\s+\d+", traces), \
            traces[:1500]
    finally:
        d.stop()


def test_pprof_real_mode_wall_time_and_kinds():
    d, tid, listing = profiled("--real", work="spinsleep", secs=2)
    try:
        out = os.path.join(d.dir, "p.pb.gz")
        pcmon("export", tid, "--format", "pprof", "-o", out, sock=d.sock, check=0)
        text = go_pprof("-top", "-sample_index=wall", out)
        assert "Type: wall" in text, text[:400]
        traces = go_pprof("-traces", out)
        assert re.search(r"kind:\s+blocked", traces), traces[:2000]
        rows, total, _ = pprof_top(out)
        assert total == listing["summary"]["counted"]
        bare = unique_names(listing)
        for name in ("spin_part", "sleep_part"):
            assert rows[name][1] == bare[name]["deep"], (name, rows[name], bare[name])
        # wall nanoseconds: the blocked time measured, not rounded to interrupts
        ns = go_pprof("-top", "-sample_index=wall", "-unit=ns", "-nodefraction=0", out)
        m = re.search(r"Total samples = ([\d.]+)(\w+)", ns)
        assert m, ns[:300]
    finally:
        d.stop()


def traces(path):
    """go tool pprof -traces as [(labels, frames)], frames leaf first."""
    out = []
    for block in go_pprof("-traces", path).split("-----------+")[1:]:
        labels, frames = {}, []
        for line in block.splitlines()[1:]:
            m = re.match(r"\s+(\w+):\s+(\S.*)$", line)
            if m and not frames:
                labels[m.group(1)] = m.group(2).strip()
            elif line.strip():
                frames.append(line.split()[-1])
        if labels or frames:  # the output ends with a separator
            out.append((labels, frames))
    return out


def test_pprof_thread_labels():
    d, tid, listing = profiled("--real", work="threads3", secs=1)
    try:
        out = os.path.join(d.dir, "p.pb.gz")
        pcmon("export", tid, "--format", "pprof", "-o", out, sock=d.sock, check=0)
        tr = traces(out)
        assert tr, tr
        by_thread, reader_blocked = {}, False
        for labels, frames in tr:
            assert "thread" in labels and "tid" in labels and "pid" in labels, labels
            by_thread.setdefault(labels["thread"], set()).add(labels["tid"])
            if "spinner_work" in frames:
                assert labels["thread"] == "t3-spinner", (labels, frames)
            if labels["thread"] == "t3-reader" and labels["kind"] == "blocked":
                reader_blocked = reader_blocked or "reader" in frames
        assert {"t3-reader", "t3-spinner", "t3-sleeper"} <= set(by_thread), by_thread
        assert reader_blocked, tr
        # one thread id per thread, and the names survive a restart of pcmond
        assert all(len(v) == 1 for k, v in by_thread.items() if k.startswith("t3-")), by_thread
        d.stop()
        d.start()
        pcmon("export", tid, "--format", "pprof", "-o", out, sock=d.sock, check=0)
        assert {"t3-reader", "t3-spinner", "t3-sleeper"} <= \
            {l.get("thread") for l, _ in traces(out)}
    finally:
        d.stop()


def test_folded_sums_to_counted():
    d, tid, _ = profiled("--kernel")
    try:
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        text = pcmon("export", tid, "--format", "folded", sock=d.sock, check=0).stdout
        lines = text.splitlines()
        assert lines == sorted(lines)
        total, stacks = 0, set()
        for line in lines:
            stack, count = line.rsplit(" ", 1)
            assert stack not in stacks, stack  # one line per distinct stack
            stacks.add(stack)
            total += int(count)
        assert total == listing["summary"]["counted"], (total, listing["summary"])
        assert any(s.startswith("[critical:gc]") for s in stacks)
        assert any(s.startswith("_start;") and "_[k]" in s for s in stacks), lines[:5]
        assert any(";calibrate_[i]" in s for s in stacks), lines[:5]
        # a shallow count is the sum of the lines ending in that procedure
        mut = sum(int(l.rsplit(" ", 1)[1]) for l in lines if l.rsplit(" ", 1)[0].endswith(";mutator"))
        assert mut == unique_names(listing)["mutator"]["shallow"]
        # --when applies first, as in list
        w = pcmon("export", tid, "--format", "folded", "--when", "*->crit.gc->*", sock=d.sock,
                  check=0).stdout
        assert all("gc" in l or l.startswith("[critical") for l in w.splitlines()), w[:500]
    finally:
        d.stop()


def test_json_export_and_errors():
    d, tid, listing = profiled()
    try:
        js = pcmon_json("export", tid, "--format", "json", sock=d.sock)[0]
        assert sum(s["count"] for s in js["profile"]["samples"]) == js["summary"]["counted"]
        assert js["profile"]["functions"] and js["profile"]["locations"]
        p = pcmon("export", tid, "--format", "svg", sock=d.sock, check=2)
        assert "--format svg: give one of folded|pprof|json" in p.stderr, p.stderr
        p = subprocess.run([os.path.join(os.path.dirname(__file__), "../../bin/pcmon"), "export",
                            tid, "--format", "pprof"], capture_output=True,
                           env=dict(os.environ, PCMON_SOCKET=d.sock))
        assert p.returncode == 0 and p.stdout[:2] == b"\x1f\x8b"  # a pipe may take it
        p = pcmon("export", "99", "--format", "folded", sock=d.sock, check=1)
        assert "99" in p.stderr
        p = pcmon("export", tid, "--format", "folded", "-o", "/nonexistent/dir/x", sock=d.sock,
                  check=1)
        assert "/nonexistent/dir/x" in p.stderr and len(p.stderr.splitlines()) == 1
        p = pcmon("flamegraph", sock=d.sock, check=2)
        assert "which target" in p.stderr
    finally:
        d.stop()


def svg_frames(path):
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.parse(path).getroot()
    frames = root.findall(".//s:g[@class='f']", ns)
    return root, frames, ns


def test_flamegraph_widths_and_xml():
    d, tid, _ = profiled("--kernel")
    try:
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        out = os.path.join(d.dir, "f.svg")
        pcmon("flamegraph", tid, "-o", out, "--title", "a <test> & title", sock=d.sock, check=0)
        root, frames, ns = svg_frames(out)
        total = int(root.get("data-total"))
        assert total == listing["summary"]["counted"]
        assert frames
        width = float(root.get("width")) - 20
        for g in frames:
            rect = g.find("s:rect", ns)
            n = int(g.get("data-n"))
            assert abs(float(rect.get("width")) - n * width / total) < 0.01, (g.attrib, rect.attrib)
        roots = sum(int(g.get("data-n")) for g in frames if g.get("data-d") == "0")
        assert roots <= total and total - roots <= total * 0.001 + 1, (roots, total)
        types = {g.get("data-t") for g in frames}
        assert {"user", "kernel", "inline", "critical"} <= types, types
        # a frame's samples equal the listing's: mutator is a leaf, so its width is its count
        mut = [g for g in frames if g.get("data-name") == "mutator"]
        assert sum(int(g.get("data-n")) for g in mut) == unique_names(listing)["mutator"]["deep"]
        assert "a <test> & title" in "".join(root.itertext())
        # each frame's tooltip is in the file itself (read without the script)
        for g in frames:
            t = g.find("s:title", ns).text
            assert t == f"{g.get('data-name')} ({g.get('data-n')} samples, " \
                        f"{100 * int(g.get('data-n')) / total:.2f}%)", (t, g.attrib)
        assert root.get("data-layout") == "flame" and root.get("data-inverted") == "0"
        # --inverted: callers, each stack from its innermost frame, drawn from the top
        inv = os.path.join(d.dir, "inv.svg")
        pcmon("flamegraph", tid, "--inverted", "-o", inv, sock=d.sock, check=0)
        iroot, iframes, _ = svg_frames(inv)
        assert iroot.get("data-inverted") == "1" and iroot.get("data-layout") == "icicle"
        top = [g for g in iframes if g.get("data-d") == "0"]
        leaf = sum(int(g.get("data-n")) for g in top if g.get("data-name") == "mutator")
        assert leaf == unique_names(listing)["mutator"]["shallow"], leaf
        y0 = {float(g.find("s:rect", ns).get("y")) for g in top}
        y1 = {float(g.find("s:rect", ns).get("y")) for g in iframes if g.get("data-d") == "1"}
        assert len(y0) == 1 and max(y0) < min(y1), (y0, y1)
    finally:
        d.stop()


def test_tall_flamegraph_opens_at_its_root():
    """A graph taller than 800 px (a recursion 40 deep) is an icicle: its root frames in the
    first row under the title, its deepest at the bottom, so that it opens on its root."""
    d, tid, _ = profiled(work="rec40", secs=1)
    try:
        out = os.path.join(d.dir, "tall.svg")
        pcmon("flamegraph", tid, "-o", out, sock=d.sock, check=0)
        root, frames, ns = svg_frames(out)
        assert root.get("data-layout") == "icicle" and float(root.get("height")) > 800, \
            root.attrib
        y = {}
        for g in frames:
            y.setdefault(int(g.get("data-d")), set()).add(float(g.find("s:rect", ns).get("y")))
        assert max(y) >= 40 and y[0] == {32.0}, sorted(y)[:3]
        assert all(y[k] == {32.0 + 16 * k} for k in y), y
    finally:
        d.stop()


def chromium_dom(url):
    p = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                        "--enable-logging=stderr", "--v=0", "--dump-dom", url],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    errors = [l for l in p.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    return p.stdout, errors


def test_flamegraph_renders_in_chromium_search_and_zoom():
    d, tid, _ = profiled()
    try:
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        out = os.path.join(d.dir, "f.svg")
        pcmon("flamegraph", tid, "-o", out, sock=d.sock, check=0)
        _, frames, ns = svg_frames(out)
        gc = next(g for g in frames if g.get("data-name") == "gc" or
                  g.get("data-name") == "main")
        dom, errors = chromium_dom(f"file://{out}?search=^(mutator|my_alloc)$&zoom={gc.get('id')}")
        assert not errors, errors
        assert 'data-ready="1"' in dom, dom[:500]
        bare = unique_names(listing)
        want = 100 * (bare["mutator"]["deep"] + bare["my_alloc"]["deep"]) / \
            listing["summary"]["counted"]
        got = float(re.search(r'data-matched="([\d.]+)"', dom).group(1))
        assert abs(got - want) < 0.01, (got, want)
        assert f'data-zoom="{gc.get("id")}"' in dom
        # the zoomed frame now spans the whole width, its siblings are hidden
        z = re.search(r'<g class="f[^"]*" id="%s"[^>]*>.*?<rect[^>]*width="([\d.]+)"' % gc.get("id"),
                      dom, re.S)
        assert z and abs(float(z.group(1)) - 1180) < 0.01, z and z.group(0)
        # names show as labels once the script ran
        assert re.search(r"<text[^>]*>mutator</text>", dom)
    finally:
        d.stop()


class Tmux:
    def __init__(self, cmd, env):
        self.sock = f"pcmon-test-{os.getpid()}"
        envs = [f"{k}={v}" for k, v in env.items()]
        subprocess.run(["tmux", "-L", self.sock, "new-session", "-d", "-s", "t", "-x", "140",
                        "-y", "40", "env", *envs, *cmd], check=True)

    def screen(self):
        p = subprocess.run(["tmux", "-L", self.sock, "capture-pane", "-p", "-t", "t"],
                           capture_output=True, text=True)
        return p.stdout if p.returncode == 0 else None

    def keys(self, *k):
        subprocess.run(["tmux", "-L", self.sock, "send-keys", "-t", "t", *k], check=True)

    def wait(self, pred, timeout=15):
        end = time.time() + timeout
        while time.time() < end:
            s = self.screen()
            if s is not None and pred(s):
                return s
            time.sleep(0.1)
        raise AssertionError(f"screen never matched; last:\n{self.screen()}")

    def alive(self):
        return subprocess.run(["tmux", "-L", self.sock, "has-session", "-t", "t"],
                              capture_output=True).returncode == 0

    def kill(self):
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)


def counted(screen):
    return int(re.search(r"counted (\d+)", screen).group(1))


def elapsed(screen):
    return float(re.search(r"t=\d+us, ([\d.]+) s", screen).group(1))


def test_top_in_tmux():
    d = Daemon().start()
    spin = subprocess.Popen([workload("spinner"), "30"], stdout=subprocess.PIPE, text=True)
    t = None
    try:
        assert spin.stdout.readline().strip() == "ready"
        t = Tmux([os.path.abspath(os.path.join(os.path.dirname(__file__), "../../bin/pcmon")),
                  "top", "--pid", str(spin.pid), "-d", "0.3"], {"PCMON_SOCKET": d.sock})
        s = t.wait(lambda s: "spinner.spin_here" in s)
        assert "by shallow" in s
        t.keys("d")
        t.wait(lambda s: "by deep" in s)
        t.keys("s")
        t.wait(lambda s: "by shallow" in s)
        # freeze: the screen stops changing while sampling goes on
        t.keys("Space")
        s1 = t.wait(lambda s: "[frozen]" in s)
        time.sleep(1.0)
        assert elapsed(t.screen()) == elapsed(s1)
        t.keys("Space")
        t.wait(lambda s: "[frozen]" not in s and elapsed(s) > elapsed(s1) + 0.5)
        # zero: the counts start again
        before = counted(t.wait(lambda s: counted(s) > 100))
        t.keys("z")
        t.wait(lambda s: counted(s) < before)
        t.keys("k")
        t.wait(lambda s: "kernel frames off" in s)
        # a smaller terminal: the lines follow it
        subprocess.run(["tmux", "-L", t.sock, "resize-window", "-t", "t", "-x", "70", "-y", "12"],
                       check=True)
        s = t.wait(lambda s: "spin_here" in s and len(s.splitlines()) <= 12)
        assert max(len(l) for l in s.splitlines()) <= 70
        t.keys("q")
        end = time.time() + 10
        while t.alive() and time.time() < end:
            time.sleep(0.1)
        assert not t.alive()
        # top's own target went with it
        assert pcmon_json("targets", sock=d.sock)[0]["targets"] == []
    finally:
        if t:
            t.kill()
        spin.kill()
        spin.wait()
        d.stop()


def test_top_batch_daemon_and_embedded():
    d = Daemon().start()
    spin = subprocess.Popen([workload("spinner"), "20"], stdout=subprocess.PIPE, text=True)
    try:
        assert spin.stdout.readline().strip() == "ready"
        for sock in (d.sock, NODAEMON):
            p = pcmon("top", "-b", "-n", "2", "-d", "0.3", "--pid", spin.pid, sock=sock, check=0)
            heads = [l for l in p.stdout.splitlines() if l.startswith("pcmon top:")]
            assert len(heads) == 2, p.stdout
            assert "spinner.spin_here" in p.stdout
            rows = [l for l in p.stdout.split("\n\n")[-2].splitlines() if "spin_here" in l]
            assert rows and float(rows[0].split()[1].rstrip("%")) > 80, p.stdout
        assert pcmon_json("targets", sock=d.sock)[0]["targets"] == []
        p = pcmon("top", "--pid", spin.pid, sock=d.sock, check=2)  # not a terminal
        assert "-b" in p.stderr
        p = pcmon("top", "-b", "-d", "0", "--pid", spin.pid, sock=d.sock, check=2)
        assert "--delay" in p.stderr
    finally:
        spin.kill()
        spin.wait()
        d.stop()


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
