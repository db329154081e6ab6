#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Allocations by time (docs/alloc.md): windows of a target's allocations against what
tests/workloads/allocphases.c says it did in each second of wall-clock time."""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, first_json_line, pcmon, pcmon_json, run_tests, workload  # noqa: E402

RATE = 65536


def run_phases(d, secs=3, *more):
    """allocphases under pcmon --alloc (no sampling), through daemon @d: the target's id and
    the program's own figures (its phases' bounds, its bytes by wall second)."""
    listing, p = pcmon_json("run", "--no-sample", "--alloc", "--alloc-rate", RATE, *more, "--",
                            workload("allocphases"), secs, sock=d.sock)
    own = first_json_line(p.stdout)
    own["seconds"] = {int(k): v for k, v in own["seconds"].items()}
    return listing["target"]["id"], own


def sites(alloc):
    return {p["name"]: p for p in alloc["procedures"]}


def window(d, tid, since, until, *more):
    return pcmon_json("list", tid, "--alloc", "--since", f"@{since}", "--until", f"@{until}",
                      *more, sock=d.sock)[0]["alloc"]


def close(got, want, stderr, what):
    """Within 4 standard errors (pcmon's own) or 5 %, whichever is wider."""
    assert abs(got - want) <= max(4 * stderr, 0.05 * want) + RATE, (what, got, want, stderr)


def test_windows_of_three_phases():
    """A churning site, and a leak in the middle phase only: a window of whole seconds inside
    each phase gives each site's bytes allocated in it, and what was live at its end: nothing
    of the churn, the leak's bytes up to then; a window before the leak holds none of it."""
    d = Daemon().start()
    try:
        tid, own = run_phases(d, 3, "--slices", "1s")
        secs, ph = own["seconds"], own["phases"]
        checked = 0
        for i, name in enumerate("ABC"):
            since, until = math.ceil(ph[i]), math.floor(ph[i + 1])
            assert until - since >= 2, (name, ph)
            a = window(d, tid, since, until)
            assert a["window"]["from"] == since and a["window"]["to"] == until, a["window"]
            rows = sites(a)
            churn = sum(secs.get(s, [0, 0])[0] for s in range(since, until))
            leak = sum(secs.get(s, [0, 0])[1] for s in range(since, until))
            live = sum(secs.get(s, [0, 0])[1] for s in secs if s < until)
            c = rows.get("churn", {"alloc_bytes": 0, "alloc_bytes_stderr": 0, "inuse_bytes": 0})
            close(c["alloc_bytes"], churn, c["alloc_bytes_stderr"], f"{name}: churn allocated")
            assert c["inuse_bytes"] <= 4 * RATE, (name, "churn holds nothing", c)
            k = rows.get("leak", {"alloc_bytes": 0, "alloc_bytes_stderr": 0, "inuse_bytes": 0,
                                  "inuse_bytes_stderr": 0})
            if leak:
                close(k["alloc_bytes"], leak, k["alloc_bytes_stderr"], f"{name}: leak allocated")
            else:
                assert k["alloc_bytes"] == 0, (name, "no leak in the window", k)
            close(k["inuse_bytes"], live, k["inuse_bytes_stderr"], f"{name}: leak live at the end")
            print(f"  {name} [{since}, {until}): churn {c['alloc_bytes'] / 2**20:.1f} MiB "
                  f"(own {churn / 2**20:.1f}), leak {k['alloc_bytes'] / 2**20:.1f} MiB "
                  f"(own {leak / 2**20:.1f}), leak live {k['inuse_bytes'] / 2**20:.1f} MiB "
                  f"(own {live / 2**20:.1f})")
            checked += 1
        assert checked == 3
        # the text says which window, and what its figures are
        text = pcmon("list", tid, "--alloc", "--since", f"@{math.ceil(ph[1])}", "--until",
                     f"@{math.floor(ph[2])}", sock=d.sock, check=0).stdout
        assert "window:" in text and "allocated: in the window; live: at its end" in text, text
        # an export of a window holds what its listing does
        a = window(d, tid, math.ceil(ph[1]), math.floor(ph[2]))
        folded = pcmon("export", tid, "--alloc", "--alloc-value", "alloc_space", "--format", "folded",
                       "--since", f"@{math.ceil(ph[1])}", "--until", f"@{math.floor(ph[2])}",
                       sock=d.sock, check=0).stdout
        total = sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines() if line.strip())
        assert abs(total - a["summary"]["alloc_bytes"]) <= len(folded.splitlines()) + 1, \
            (total, a["summary"])
    finally:
        assert d.stop() == 0, d.logtext()


def test_timeline_of_a_leak():
    """timeline --alloc: each slice's allocated bytes and what was live at its end follow the
    program's own seconds; the leak, followed (it holds the most at the end), rises through B
    and stays flat through C; the churn holds nothing; --svg is refused, saying so."""
    d = Daemon().start()
    try:
        tid, own = run_phases(d, 3, "--slices", "1s")
        secs, ph = own["seconds"], own["phases"]
        tl = pcmon_json("timeline", tid, "--alloc", sock=d.sock)[0]["alloc"]["timeline"]
        names = [q["name"] for q in tl["procedures"]]
        assert names and names[0] == "leak", names
        leak = tl["procedures"][0]["inuse_bytes"]
        assert len(leak) == len(tl["slices"]), (len(leak), len(tl["slices"]))
        for i, sl in enumerate(tl["slices"]):
            t0 = int(sl["t0"])
            alloc = sum(secs.get(t0, [0, 0]))
            live = sum(v[1] for t, v in secs.items() if t <= t0)
            close(sl["alloc_bytes"], alloc, sl["alloc_bytes_stderr"], f"slice {t0}: allocated")
            close(sl["inuse_bytes"], live, sl["inuse_bytes_stderr"], f"slice {t0}: live")
            close(leak[i], live, sl["inuse_bytes_stderr"], f"slice {t0}: the leak live")
        # through C (whole seconds after B's end) the leak's live bytes do not move
        c = [leak[i] for i, sl in enumerate(tl["slices"]) if sl["t0"] >= math.ceil(ph[2])]
        assert len(c) >= 2 and max(c) - min(c) <= 4 * RATE, c
        text = pcmon("timeline", tid, "--alloc", sock=d.sock, check=0).stdout
        assert "allocated" in text and "live" in text and "leak" in text, text
        for opt, said in ((["--svg", "/dev/null"], "--svg"), (["--proc", "leak"], "--proc")):
            p = pcmon("timeline", tid, "--alloc", *opt, sock=d.sock)
            assert p.returncode == 2 and said in p.stderr, p
    finally:
        assert d.stop() == 0, d.logtext()


def test_diff_finds_the_leak():
    """diff --alloc between a window of A and one of B: live at each end, the leak grew beyond
    noise and the churn did not change; allocated a second, the churn (the same rate in both)
    did not change and the leak grew; JSON and text say the same, and so do the two windows
    saved to files."""
    d = Daemon().start()
    try:
        tid, own = run_phases(d, 3, "--slices", "1s")
        ph, secs = own["phases"], own["seconds"]
        wa, wb = (math.ceil(ph[0]), math.floor(ph[1])), (math.ceil(ph[1]), math.floor(ph[2]))
        a, b = f"{tid}@@{wa[0]}..@{wa[1]}", f"{tid}@@{wb[0]}..@{wb[1]}"
        for value in ("inuse", "alloc"):
            out, _ = pcmon_json("diff", a, b, "--alloc", "--alloc-value", value, sock=d.sock)
            rows = {r["procedure"].rsplit(".", 1)[-1]: r for r in out["procedures"]}
            assert out["value"] == value, out
            assert rows["leak"]["change"] == "grew", (value, rows["leak"])
            c = rows["churn"]
            if value == "inuse":  # (it holds nothing at either end)
                assert c["change"] in ("no change", "untested"), (value, c)
            else:
                # the churn's rate as the program kept it (a busy machine moves it between
                # windows): the diff's change is that change, within 4 of its errors
                rate = [sum(secs.get(t, [0, 0])[0] for t in range(*w)) / (w[1] - w[0])
                        for w in (wa, wb)]
                se = math.hypot(c["a_bytes_stderr"], c["b_bytes_stderr"])
                got = c["b_bytes"] - c["a_bytes"]
                assert abs(got - (rate[1] - rate[0])) <= 4 * se + RATE, (c, rate)
                assert c["change"] == "no change" or abs(rate[1] - rate[0]) > se, (c, rate)
            print(f"  --alloc-value {value}: leak {rows['leak']['a_bytes']} -> "
                  f"{rows['leak']['b_bytes']} (z {rows['leak']['z']:.1f}), churn "
                  f"{rows['churn']['a_bytes']} -> {rows['churn']['b_bytes']} "
                  f"(p {rows['churn']['p']:.2f})")
        text = pcmon("diff", a, b, "--alloc", sock=d.sock, check=0).stdout
        assert "grew" in text and "allocphases.leak" in text, text
        # the windows saved (save --alloc) diff as they did live
        fa, fb = (os.path.join(d.dir, n) for n in ("a.json", "b.json"))
        pcmon("save", a, fa, "--alloc", sock=d.sock)
        pcmon("save", b, fb, "--alloc", sock=d.sock)
        live, _ = pcmon_json("diff", a, b, "--alloc", sock=d.sock)
        saved, _ = pcmon_json("diff", fa, fb, "--alloc", sock=d.sock)
        assert saved["procedures"] == live["procedures"], (saved["procedures"], live["procedures"])
        p = pcmon("diff", a, b, "--alloc", "--alloc-value", "nope", sock=d.sock)
        assert p.returncode == 2 and "--alloc-value" in p.stderr, p
    finally:
        assert d.stop() == 0, d.logtext()


def read_views(d, tid, w, pb):
    """What a target's allocations list as: whole, in window @w, by slice; its pprof to @pb."""
    whole = pcmon_json("list", tid, "--alloc", sock=d.sock)[0]["alloc"]
    inw = window(d, tid, *w)
    tl = pcmon_json("timeline", tid, "--alloc", "--since", f"@{w[0]}", "--until", f"@{w[1]}",
                    sock=d.sock)[0]["alloc"]
    pcmon("export", tid, "--alloc", "--alloc-value", "inuse_space", "--format", "folded", "-o", pb,
          sock=d.sock)
    return whole, inw, tl, sorted(open(pb).read().splitlines())


def test_read_back_from_its_results_file():
    """A target read back from its results file lists its allocations as it did: the whole
    table and BPF's counters, a window, the timeline and an export, the same to the byte.
    A file written before the stacks were kept lists its table, and a window of it is refused,
    saying why."""
    d = Daemon().start()
    try:
        tid, own = run_phases(d, 2, "--slices", "1s")
        w = (math.ceil(own["phases"][1]), math.floor(own["phases"][2]))
        before = read_views(d, tid, w, os.path.join(d.dir, "a.folded"))
        assert before[0]["summary"]["calls"] > 0 and before[3], before[0]["summary"]
        assert d.stop() == 0, d.logtext()
        d = Daemon(state_dir=d.state).start()
        after = read_views(d, tid, w, os.path.join(d.dir, "b.folded"))
        for what, x, y in zip(("whole", "window", "timeline", "export"), before, after):
            assert x == y, (what, x, y)
        print(f"  read back: {before[0]['summary']['alloc_bytes']} bytes allocated, "
              f"{len(before[3])} stacks, {len(before[2]['timeline']['slices'])} slices")

        # the same file as an older pcmon wrote it: the totals and the table
        path = os.path.join(d.state, f"target-{tid}.json")
        assert d.stop() == 0, d.logtext()
        doc = json.load(open(path))
        sec = doc["alloc"]
        for k in ("procs", "locs", "stacks", "sites", "slices", "var_unit"):
            del sec[k]
        sec["procedures"] = [{k: v for k, v in r.items() if k != "sort"}
                             for r in before[0]["procedures"]]
        json.dump(doc, open(path, "w"))
        d = Daemon(state_dir=d.state).start()
        old = pcmon_json("list", tid, "--alloc", sock=d.sock)[0]["alloc"]
        assert old["procedures"] == before[0]["procedures"], old
        p = pcmon("list", tid, "--alloc", "--since", "+1s", sock=d.sock)
        assert p.returncode != 0 and "list it without --since/--until" in p.stderr, p
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    finally:
        assert d.stop() == 0, d.logtext()


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
