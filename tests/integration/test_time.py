#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Time as a dimension (docs/sampling.md "Time slices", docs/diff.md): slices are kept,
coarsened and merged over budget, survive a restart; --since/--until answer a workload's
phases with its own shares; the timeline shows when a function got hot; diff calls nothing
changed between two runs of one program, and calls the function that does 20 % more work
and its callers changed, nothing else; saved files diff on another daemon."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, pcmon, pcmon_json, run_tests, workload

INTERVAL = 250  # us: enough samples in a few seconds on a busy 2-core machine
PHASE_S = 5
FUNCS = ("work_a", "work_b", "work_c")


def run_target(d, cmd, name, *opts, go=False):
    """Start @cmd, watch it as target @name from its start, wait; its output as JSON. With
    @go, @cmd waits for a line on stdin to begin, sent once the target is started."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                         stdin=subprocess.PIPE if go else None)
    pcmon("start", "--pid", p.pid, "--name", name, "--interval", INTERVAL, *opts,
          sock=d.sock, check=0)
    out, _ = p.communicate("\n" if go else None, timeout=120)
    return json.loads(out.strip().splitlines()[-1])


def shares(listing):
    counted = listing["summary"]["counted"] or 1
    return {p["name"]: 100.0 * p["shallow"] / counted for p in listing["procedures"]}


def target_facts(d, name):
    t, _ = pcmon_json("targets", sock=d.sock)
    return next(x for x in t["targets"] if x["name"] == name)


_phases = {}


def phases_target(d, *opts):
    """One run of the phases workload, with 1 s slices made 2 s once 30 s old (cached), and
    whatever else @opts ask (test_time_tables.py: --count)."""
    if d.sock not in _phases:
        _phases[d.sock] = run_target(d, [workload("phases"), str(PHASE_S), "wait"], "ph",
                                     "--slices", "1s,2s@30s", *opts, go=True)["phases"]
    return _phases[d.sock]


def test_phase_windows_match_the_workload():
    d = Daemon().start()
    try:
        ph = phases_target(d)
        for i, p in enumerate(ph):
            # a second inside each end: whole 1 s slices, none reaching the other phase
            l, _ = pcmon_json("list", "ph", "--since", f"@{p['start'] + 1:.3f}",
                              "--until", f"@{p['end'] - 1:.3f}", sock=d.sock)
            w = l["window"]
            assert w["from"] >= p["start"] and w["to"] <= p["end"], (w, p)
            got = shares(l)
            for f in FUNCS:
                want = 100 * p[f]
                print(f"phase {i} {f}: pcmon {got.get(f, 0):.2f} % workload {want:.2f} % "
                      f"({l['summary']['counted']} samples)")
                assert abs(got.get(f, 0) - want) <= 2.0, (i, f, got.get(f), want)
        # no window: the whole target, as before
        l, _ = pcmon_json("list", "ph", sock=d.sock)
        assert "window" not in l
    finally:
        d.stop()


def test_timeline_shows_when():
    d = Daemon().start()
    try:
        ph = phases_target(d)
        tl, _ = pcmon_json("timeline", "ph", "--proc", "work_c", sock=d.sock)
        slices = tl["timeline"]["slices"]
        c = next(p for p in tl["timeline"]["procedures"] if p["name"] == "work_c")
        before = [v for s, v in zip(slices, c["shallow"]) if s["t1"] <= ph[0]["end"]]
        after = [v for s, v in zip(slices, c["shallow"]) if s["t0"] >= ph[1]["start"]]
        assert before and after and sum(before) == 0 and min(after[:-1] or after) > 0, (before, after)
        svg = os.path.join(d.dir, "tl.svg")
        pcmon("timeline", "ph", "--svg", svg, sock=d.sock, check=0)
        assert open(svg).read().startswith("<?xml")
        text = pcmon("timeline", "ph", sock=d.sock, check=0).stdout
        assert "work_c" in text and "samples" in text
    finally:
        d.stop()


def test_slices_coarsen_merge_and_survive_restart():
    d = Daemon().start()
    try:
        run_target(d, [workload("phases"), "2"], "co", "--slices", "1s,2s@2s")
        run_target(d, [workload("phases"), "2"], "bu", "--slice-memory", "1", "--slices", "1s")
        time.sleep(3)  # older than 2 s: 1 s slices merge into 2 s ones
        co, bu = target_facts(d, "co"), target_facts(d, "bu")
        assert co["slices_coarsened"] > 0 and co["slices"] == "1s,2s@2s", co
        assert bu["slices_merged_early"] > 0 and bu["slice_memory_kib"] == 1, bu
        before, _ = pcmon_json("list", "co", "--since", "-1h", sock=d.sock)
        time.sleep(5.5)  # saved
        d.stop()
        d.start()
        after, _ = pcmon_json("list", "co", "--since", "-1h", sock=d.sock)
        assert after["window"]["slices"] == before["window"]["slices"] > 0, (before["window"], after["window"])
        assert after["summary"]["counted"] == before["summary"]["counted"]
        assert target_facts(d, "co")["slices_kept"] == co["slices_kept"]
    finally:
        d.stop()


def significant(diff):
    return {p["procedure"]: p["change"] for p in diff["procedures"] if p["significant"]}


def test_diff_same_program_finds_nothing():
    """10 diffs of two runs of one program: Holm holds each diff's chance of calling
    anything changed to 1 %; over 10, allow one."""
    d = Daemon().start()
    try:
        false = 0
        for i in range(10):
            runs = [subprocess.Popen([workload("diffwork"), "1"], stdout=subprocess.PIPE)
                    for _ in range(2)]
            for k, p in enumerate(runs):
                pcmon("start", "--pid", p.pid, "--name", f"s{i}{k}", "--interval", INTERVAL,
                      sock=d.sock, check=0)
            for p in runs:
                p.communicate(timeout=60)
            diff, _ = pcmon_json("diff", f"s{i}0", f"s{i}1", sock=d.sock)
            sig = significant(diff)
            print(f"diff {i}: {diff['a']['samples']:.0f} vs {diff['b']['samples']:.0f} samples, significant: {sig}")
            false += bool(sig)
        print(f"false positives: {false} of 10")
        assert false <= 1, false
    finally:
        d.stop()


def test_diff_finds_the_slower_function_and_saved_files_diff_elsewhere():
    d, d2 = Daemon().start(), Daemon().start()
    try:
        a = run_target(d, [workload("diffwork"), "4"], "before")
        b = run_target(d, [workload("diffwork"), "4", "20"], "after")
        print(f"workload: alpha {100 * a['alpha']:.1f} % -> {100 * b['alpha']:.1f} %")
        diff, _ = pcmon_json("diff", "before", "after", sock=d.sock)
        sig = significant(diff)
        print("significant:", sig)
        assert sig.get("alpha") == "grew" and sig.get("outer_a") == "grew", sig
        callers = {"alpha", "outer_a", "main", "__libc_start_call_main", "__libc_start_main",
                   "_start"}
        assert set(sig) <= callers, sig
        fa, fb = os.path.join(d.dir, "before.json"), os.path.join(d.dir, "after.json")
        pcmon("save", "before", fa, sock=d.sock, check=0)
        pcmon("save", "after", fb, sock=d.sock, check=0)
        d.stop()
        again, _ = pcmon_json("diff", fa, fb, sock=d2.sock)
        assert significant(again) == sig
        assert [p["procedure"] for p in again["procedures"]] == [p["procedure"] for p in diff["procedures"]]
        svg = os.path.join(d2.dir, "diff.svg")
        pcmon("diff", fa, fb, "--svg", svg, sock=d2.sock, check=0)
        assert "rgb(255," in open(svg).read()  # something grew, in red
        pb = os.path.join(d2.dir, "a.pb.gz")
        pcmon("export", fa, "--format", "pprof", "-o", pb, sock=d2.sock, check=0)
        assert open(pb, "rb").read(2) == b"\x1f\x8b"
    finally:
        d.stop()
        d2.stop()


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
