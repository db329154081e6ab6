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
from lib import ROOT, Daemon, pcmon, pcmon_json, run_tests
from test_time import phases_target

FIXTURE_V3 = os.path.join(ROOT, "tests", "fixtures", "store", "format3", "target-1.json")


def calls_of(listing):
    return {p["name"]: p for p in listing["calls"]["procedures"]}


def test_count_windows_follow_the_phases():
    d = Daemon().start()
    try:
        ph = phases_target(d, "--count", "phases.work_*")
        whole = calls_of(pcmon_json("list", "ph", "--calls", sock=d.sock)[0])
        assert whole["work_c"]["calls"] > 0 and whole["work_a"]["calls"] > 0, whole
        got = []
        for i, p in enumerate(ph):
            l, _ = pcmon_json("list", "ph", "--calls", "--since", f"@{p['start'] + 1:.3f}",
                              "--until", f"@{p['end'] - 1:.3f}", sock=d.sock)
            w = l["calls"]["window"]
            assert w["from"] >= p["start"] and w["to"] <= p["end"] and w["slices"] > 0, (w, p)
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
                              "--until", f"@{p['end'] - 1:.3f}", sock=d.sock)
            c = calls_of(l)
            assert {f: c[f]["calls"] for f in c} == {f: got[i][f]["calls"] for f in c}, (i, c)
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
        l, _ = pcmon_json("list", "1", "--calls", "--until", "@1000", sock=d.sock)
        assert l["calls"]["window"]["slices"] == 0
        assert all(p["calls"] == 0 for p in l["calls"]["procedures"])
    finally:
        d.stop()


if __name__ == "__main__":
    run_tests(globals())
