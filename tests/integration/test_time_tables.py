#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Time as a dimension for the call table and the probe-node tables (docs/count.md,
docs/legs.md): --since/--until on `list --calls` answered from the call table's own time
slices, against the phases workload (work_c runs in its second phase only); the slices of
every window add up to the whole table, and survive a restart; a real format-3 results
file (tests/fixtures/store/format3, written by pcmond before time slices) loads as one
slice that a window anywhere in its life takes whole."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import ROOT, Daemon, pcmon, pcmon_json, run_tests, workload
from test_time import run_target

FIXTURE_V3 = os.path.join(ROOT, "tests", "fixtures", "store", "format3", "target-1.json")


# call counting, and nodes on work_a (1) and work_c (2) with the leg between them
OPTS = ("--count", "phases.work_*", "--node", "phases.work_a", "--node", "phases.work_c",
        "--leg", "1:2")


PHASE_S = 6  # the phases begin once the target is started (its probes take seconds)
# A phase's window ends this long before the phase: the window takes the whole slice its
# end cuts (1 s), and a boundary's read up to 0.25 s late charges what it finds to the
# slice before (docs/count.md, "Windows")
UNTIL_S = 1.3
_runs = {}


def phases_target(d):
    """One run of the phases workload as target "ph" with OPTS and 1 s slices (cached); its
    phases, each from when the target watched it."""
    if d.sock not in _runs:
        ph = run_target(d, [workload("phases"), str(PHASE_S), "wait"], "ph", "--slices",
                        "1s,2s@30s", *OPTS, go=True)["phases"]
        t, _ = pcmon_json("targets", sock=d.sock)
        start = next(x for x in t["targets"] if x["name"] == "ph")["start_wall"]
        assert start < ph[0]["end"] - 3, (start, ph)
        ph[0]["start"] = max(ph[0]["start"], start)
        _runs[d.sock] = ph
    return _runs[d.sock]


def calls_of(listing):
    return {p["name"]: p for p in listing["calls"]["procedures"]}


def test_count_windows_follow_the_phases():
    d = Daemon().start()
    try:
        ph = phases_target(d)
        whole = calls_of(pcmon_json("list", "ph", "--calls", sock=d.sock)[0])
        assert whole["work_c"]["calls"] > 0 and whole["work_a"]["calls"] > 0, whole
        got = []
        for i, p in enumerate(ph):
            l, _ = pcmon_json("list", "ph", "--calls", "--since", f"@{p['start'] + 1:.3f}",
                              "--until", f"@{p['end'] - UNTIL_S:.3f}", sock=d.sock)
            w = l["calls"]["window"]
            assert w["from"] >= p["start"] and w["to"] <= p["end"] - 0.25 and w["slices"] > 0, (w, p)
            c = calls_of(l)
            print(f"phase {i}: " + ", ".join(f"{f} {c[f]['calls']} calls" for f in sorted(c)))
            assert c["work_a"]["calls"] > 0, (i, c)
            assert c["work_a"]["max_ns"] is None and c["work_a"]["open"] is None
            got.append(c)
        assert got[0]["work_c"]["calls"] == 0, got[0]
        assert got[1]["work_c"]["calls"] > 0, got[1]
        # the slices hold every call: a window of the whole life is the whole table
        l, _ = pcmon_json("list", "ph", "--calls", "--since", "-1h", sock=d.sock)
        for f, p in calls_of(l).items():
            assert p["calls"] == whole[f]["calls"], (f, p, whole[f])
        text = pcmon("list", "ph", "--calls", "--since", f"@{ph[1]['start'] + 1:.3f}",
                     sock=d.sock, check=0).stdout
        assert "window:" in text and "not kept by time" in text, text
        # a restart keeps the slices: the same windows answer the same
        d.stop()
        d.start()
        for i, p in enumerate(ph):
            l, _ = pcmon_json("list", "ph", "--calls", "--since", f"@{p['start'] + 1:.3f}",
                              "--until", f"@{p['end'] - UNTIL_S:.3f}", sock=d.sock)
            c = calls_of(l)
            assert {f: c[f]["calls"] for f in c} == {f: got[i][f]["calls"] for f in c}, (i, c)
    finally:
        d.stop()


def test_tables_windows_follow_the_phases():
    d = Daemon().start()
    try:
        ph = phases_target(d)
        whole = pcmon_json("tables", "ph", sock=d.sock)[0]["tables"]
        hits = [n["hits"] for n in whole["nodes"]]
        assert hits[0] > 0 and hits[1] > 0, whole["nodes"]
        got = []
        for i, p in enumerate(ph):
            t = pcmon_json("tables", "ph", "--since", f"@{p['start'] + 1:.3f}", "--until",
                           f"@{p['end'] - UNTIL_S:.3f}", sock=d.sock)[0]["tables"]
            w = t["window"]
            assert w["from"] >= p["start"] and w["to"] <= p["end"] - 0.25 and w["slices"] > 0, (w, p)
            leg = t["legs"][0]
            print(f"phase {i}: work_a {t['nodes'][0]['hits']} hits, work_c "
                  f"{t['nodes'][1]['hits']} hits, leg 1:2 {leg['count']} times")
            assert leg["min_ns"] is None and leg["max_ns"] is None
            got.append(t)
        assert got[0]["nodes"][1]["hits"] == 0 and got[0]["legs"][0]["count"] == 0, got[0]
        assert got[1]["nodes"][1]["hits"] > 0 and got[1]["legs"][0]["count"] > 0, got[1]
        assert got[0]["nodes"][0]["hits"] > 0
        # every hit and leg is in some slice
        t = pcmon_json("tables", "ph", "--since", "-1h", sock=d.sock)[0]["tables"]
        assert [n["hits"] for n in t["nodes"]] == hits, (t["nodes"], hits)
        assert t["legs"][0]["count"] == whole["legs"][0]["count"]
        assert t["legs"][0]["total_ns"] == whole["legs"][0]["total_ns"]
        text = pcmon("tables", "ph", "--since", f"@{ph[1]['start'] + 1:.3f}", sock=d.sock,
                     check=0).stdout
        assert "window:" in text and "not kept by time" in text, text
        d.stop()
        d.start()
        for i, p in enumerate(ph):
            t = pcmon_json("tables", "ph", "--since", f"@{p['start'] + 1:.3f}", "--until",
                           f"@{p['end'] - UNTIL_S:.3f}", sock=d.sock)[0]["tables"]
            assert [n["hits"] for n in t["nodes"]] == [n["hits"] for n in got[i]["nodes"]]
            assert t["legs"][0]["count"] == got[i]["legs"][0]["count"]
    finally:
        d.stop()


def test_format3_fixture_loads_as_one_slice():
    d = Daemon()
    os.makedirs(d.state, exist_ok=True)
    shutil.copy(FIXTURE_V3, os.path.join(d.state, "target-1.json"))
    d.start()
    try:
        whole, _ = pcmon_json("list", "1", sock=d.sock)
        assert whole["summary"]["counted"] > 0 and whole["procedures"], whole["summary"]
        assert "window" not in whole
        t = whole["target"]
        # a window in the middle of the target's life takes its one slice, and says so
        mid = t.get("start_wall", 0) + t["elapsed_s"] / 2
        l, _ = pcmon_json("list", "1", "--since", f"@{mid:.3f}", "--until", f"@{mid + 0.01:.3f}",
                          sock=d.sock)
        w = l["window"]
        assert w["slices"] == 1 and w["cut"], w
        assert l["summary"]["counted"] == whole["summary"]["counted"], l["summary"]
        calls = calls_of(whole)
        assert calls["req_begin"]["calls"] == 81, calls
        l, _ = pcmon_json("list", "1", "--calls", "--since", f"@{mid:.3f}", sock=d.sock)
        assert l["calls"]["window"]["slices"] == 1 and l["calls"]["window"]["cut"]
        assert calls_of(l)["req_begin"]["calls"] == 81
        text = pcmon("list", "1", "--since", f"@{mid:.3f}", sock=d.sock, check=0).stdout
        assert "the window cuts a slice" in text, text
        # outside its life: nothing
        t = pcmon_json("tables", "1", "--since", f"@{mid:.3f}", sock=d.sock)[0]["tables"]
        assert t["window"]["slices"] == 1 and t["window"]["cut"], t["window"]
        assert [n["hits"] for n in t["nodes"]] == [81, 40, 40], t["nodes"]
        assert [l["count"] for l in t["legs"]] == [40, 40], t["legs"]
        l, _ = pcmon_json("list", "1", "--calls", "--until", "@1000", sock=d.sock)
        assert l["calls"]["window"]["slices"] == 0
        assert all(p["calls"] == 0 for p in l["calls"]["procedures"])
    finally:
        d.stop()


if __name__ == "__main__":
    run_tests(globals())
