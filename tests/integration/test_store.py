#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The state directory: saves that fail (a full disk, a directory in the way) are shown in
`pcmon targets` and `pcmon status`, retried, and never cost what was saved before; a
restart lists what was saved; stale temporary files go; a format-1 file still loads, and a
broken one is refused with one line naming the field; files of formats 4 and 5, written by
the pcmond of their time, list as that pcmond listed them."""
import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import ROOT, Daemon, pcmon, pcmon_json, procs, run_tests, workload

FIXTURE_V1 = os.path.join(ROOT, "tests", "fixtures", "store", "format1", "target-2.json")
STORE_FIXTURES = os.path.join(ROOT, "tests", "fixtures", "store")
FLUSH_S = 5  # pcmond saves changed targets this often


@contextlib.contextmanager
def small_tmpfs(path, size="64k"):
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0750", "tmpfs", path],
                   check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", path], check=False)
        if os.path.ismount(path):
            subprocess.run(["umount", "-l", path], check=False)


def fill(path):
    """Fill the file system of @path; returns the filler file."""
    filler = os.path.join(path, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    return filler


def wait_for(d, what, fn):
    """Waits up to three saves: pcmond saves every `interval_s` of its status (5 s, or less
    often when saving takes much CPU)."""
    start = time.time()
    while True:
        v = fn()
        if v:
            return v
        store = store_status(d)
        waited = time.time() - start
        if waited > 3 * max(FLUSH_S, store["interval_s"]):
            raise AssertionError(f"timed out after {waited:.1f} s waiting for {what}; {store}")
        time.sleep(0.2)


def targets(d):
    return {t["id"]: t for t in pcmon_json("targets", sock=d.sock)[0]["targets"]}


def store_status(d):
    return pcmon_json("status", sock=d.sock)[0]["store"]


def unsaved(d, tid):
    t = targets(d)[tid]
    return t if t.get("saved") is False else None


def tmp_files(path):
    return sorted(n for n in os.listdir(path) if n.endswith(".tmp"))


def restart(d):
    d.stop()
    d2 = Daemon(state_dir=d.state)
    d2.sock, d2.dir = d.sock, d.dir
    return d2.start()


def start_spinner(d):
    sp = subprocess.Popen([workload("spinner"), "60"], stdout=subprocess.PIPE, text=True)
    sp.stdout.readline()
    r = pcmon("start", "--pid", sp.pid, "--interval", 2000, "--name", "spin", sock=d.sock, check=0)
    return sp, int(r.stdout.strip())


def test_full_disk_reported_then_retried():
    d = Daemon()
    with small_tmpfs(d.state):
        d.start()
        sp = None
        try:
            sp, tid = start_spinner(d)
            path = os.path.join(d.state, f"target-{tid}.json")
            wait_for(d, "the first save", lambda: os.path.exists(path))
            filler = fill(d.state)
            t = wait_for(d, "a failed save in pcmon targets", lambda: unsaved(d, tid))
            assert "No space left on device" in t["save_error"], t
            text = pcmon("targets", sock=d.sock, check=0).stdout
            assert "UNSAVED" in text and f"target {tid} is not saved" in text, text
            st = store_status(d)
            assert st["unsaved_targets"] == 1 and st["save_failures"] >= 1, st
            assert "No space left on device" in st["last_error"], st
            assert "last save error" in pcmon("status", sock=d.sock, check=0).stdout
            # what was saved before is whole
            before = json.load(open(path))
            assert before["format"] == 5 and before["id"] == tid and before["sampling"]["stacks"], before
            # room again: the next flush saves, status keeps the error as history
            os.unlink(filler)
            wait_for(d, "a retried save", lambda: targets(d)[tid].get("saved") is True)
            st = store_status(d)
            assert st["unsaved_targets"] == 0 and "No space left" in st["last_error"], st
            after = json.load(open(path))
            assert after["sampling"]["seen"] > before["sampling"]["seen"], (before, after)
            assert "UNSAVED" not in pcmon("targets", sock=d.sock, check=0).stdout
            assert "cannot save target" in d.logtext() and "saved target" in d.logtext()
        finally:
            if sp:
                sp.kill()
                sp.wait()
            d.stop()


def test_restart_after_failed_saves_keeps_saved_results():
    d = Daemon()
    with small_tmpfs(d.state):
        d.start()
        d2 = sp = None
        try:
            sp, tid = start_spinner(d)
            path = os.path.join(d.state, f"target-{tid}.json")
            wait_for(d, "the first save", lambda: os.path.exists(path))
            # a save cut short by a crash left this
            with open(os.path.join(d.state, "target-200.json.tmp"), "w") as f:
                f.write('{"format":2,"id":200,')
            fill(d.state)
            wait_for(d, "a failed save", lambda: unsaved(d, tid))
            saved = json.load(open(path))["sampling"]
            live = targets(d)[tid]["samples"]
            assert live > saved["seen"], (live, saved["seen"])
            d.stop()  # its last flush fails too: no temporary file of its own is left
            assert tmp_files(d.state) == ["target-200.json.tmp"], os.listdir(d.state)
            sp.kill()
            sp.wait()
            sp = None

            d2 = restart(d)
            t = targets(d2)[tid]
            assert t["state"] == "stopped" and t["samples"] == saved["seen"], (t, saved["seen"])
            assert t["saved"] is True, t
            listing = pcmon_json("list", tid, sock=d2.sock)[0]
            assert listing["summary"]["interrupts"] == saved["seen"], listing["summary"]
            assert procs(listing)["spinner.spin_here"]["shallow"] > 0
            assert tmp_files(d.state) == [], os.listdir(d.state)
            assert "removed the stale temporary file" in d2.logtext()
        finally:
            if sp:
                sp.kill()
                sp.wait()
            (d2 or d).stop()


def test_directory_in_the_way():
    d = Daemon()
    obstacle = os.path.join(d.state, "target-1.json")
    os.makedirs(obstacle)
    d.start()
    d2 = None
    try:
        assert "target-1.json: not a regular file" in d.logtext(), d.logtext()
        listing, _ = pcmon_json("run", "--interval", 1000, "--", workload("threefn"), 1,
                                sock=d.sock)
        tid = listing["target"]["id"]
        assert tid == 1, listing["target"]
        t = wait_for(d, "a failed save", lambda: unsaved(d, tid))
        assert "Is a directory" in t["save_error"], t
        wait_for(d, "no temporary file left", lambda: tmp_files(d.state) == [])
        os.rmdir(obstacle)
        t0 = time.time()
        wait_for(d, "a retried save", lambda: targets(d)[tid].get("saved") is True)
        print(f"retried save after {time.time() - t0:.1f} s; {store_status(d)}")
        d2 = restart(d)
        again = pcmon_json("list", tid, sock=d2.sock)[0]
        assert again["summary"] == listing["summary"], (again["summary"], listing["summary"])
        assert again["procedures"] == listing["procedures"]  # files and lines too
    finally:
        (d2 or d).stop()


def test_drop_removes_results_at_once():
    d = Daemon().start()
    d2 = None
    try:
        listing, _ = pcmon_json("run", "--interval", 1000, "--", workload("threefn"), 1,
                                sock=d.sock)
        tid = listing["target"]["id"]
        path = os.path.join(d.state, f"target-{tid}.json")
        wait_for(d, "the save", lambda: os.path.exists(path))
        pcmon("drop", tid, sock=d.sock, check=0)
        assert not os.path.exists(path)
        d2 = restart(d)
        assert tid not in targets(d2)
    finally:
        (d2 or d).stop()


def test_format1_file_loads_and_broken_file_refused():
    d = Daemon()
    os.makedirs(d.state)
    shutil.copy(FIXTURE_V1, os.path.join(d.state, "target-2.json"))
    broken = json.load(open(FIXTURE_V1))
    broken["id"] = 3
    broken["stacks"][4]["c"] = -1  # loaded as 2^64 (UB) before format 2
    with open(os.path.join(d.state, "target-3.json"), "w") as f:
        json.dump(broken, f)
    d.start()
    try:
        t = targets(d)
        assert list(t) == [2], t
        assert t[2]["name"] == "crit" and t[2]["state"] == "exited" and t[2]["saved"], t[2]
        listing = pcmon_json("list", 2, sock=d.sock)[0]
        s = listing["summary"]
        # as the pcmond that wrote the file listed it
        assert (s["interrupts"], s["counted"], s["not_matching"], s["kernel_mode"],
                s["off_runnable"]) == (680, 653, 27, 24, 533), s
        lines = [l for l in d.logtext().splitlines() if "target-3.json" in l]
        assert len(lines) == 1, lines
        assert "ignoring" in lines[0] and "stacks[4].c: -1 is negative" in lines[0], lines
        assert "kept as target-3.json.rejected" in lines[0], lines
        assert os.path.exists(os.path.join(d.state, "target-3.json.rejected"))
        assert not os.path.exists(os.path.join(d.state, "target-3.json"))
    finally:
        d.stop()


def sampling_of(reply):
    """A listing's samples: its totals, each procedure's counts, the window it covers."""
    s = reply.get("summary") or {}
    return ({k: s.get(k) for k in ("interrupts", "counted", "not_matching", "kernel_mode",
                                   "cut_short", "oncpu")},
            sorted((p["name"], p["shallow"], p["deep"]) for p in reply.get("procedures", [])),
            reply.get("window"))


def calls_of(reply):
    """The call table's closed counts (its times are left to test_count: how the probes' cost is
    taken off them may change without the file changing)."""
    c = reply.get("calls") or {}
    return sorted((p["name"], p["calls"], p["unwound"], p["exited"], p["too_deep"])
                  for p in c.get("procedures", [])), c.get("window")


def tables_of(reply):
    """The node tables: hits, legs (their minimum and maximum only for the whole life: they
    are not kept by time), histograms."""
    t = reply.get("tables") or {}
    return ([(n["spec"], n["hits"]) for n in t.get("nodes", [])],
            [(l["id"], l["count"], l["total_ns"], l.get("hist"),
              None if reply.get("since") else (l["min_ns"], l["max_ns"]))
             for l in t.get("legs", [])], t.get("window"))


FIXTURE_SLICES, FIXTURE_SLICES_KEPT = "1s,2s@30s", "1s,2s@3650d"


def check_fixture(fmt, kept_by_time):
    """The results file of format @fmt in tests/fixtures/store, written by the pcmond of the
    commit its replies.json names, is asked what that pcmond was asked (replies.json): the
    answers are its own. The parts @kept_by_time did not keep by time then load as one slice,
    the target's life: a window of them answers with that slice."""
    here = os.path.join(STORE_FIXTURES, f"format{fmt}")
    rec = json.load(open(os.path.join(here, "replies.json")))
    assert json.load(open(os.path.join(here, "target-1.json")))["format"] == fmt
    d = Daemon()
    os.makedirs(d.state)
    # The fixtures' slices move to their coarser tier (2 s) once 30 s old, as pcmond's first
    # tick after loading them finds them: which of the test's requests came before that tick
    # was a race (a busy machine lost it). Their tier is put off for the test; what it asks
    # of the file's format is the same.
    with open(os.path.join(here, "target-1.json")) as f:
        text = f.read()
    assert f'"spec":"{FIXTURE_SLICES}"' in text, here
    text = text.replace(f'"spec":"{FIXTURE_SLICES}"', f'"spec":"{FIXTURE_SLICES_KEPT}"')
    with open(os.path.join(d.state, "target-1.json"), "w") as f:
        f.write(text)
    d.start()
    try:
        t = targets(d)
        assert list(t) == [1] and t[1]["saved"], (t, d.logtext())
        asked = 0
        for r in rec["replies"]:
            old = r["reply"]
            if "exit" in old:  # not a request that pcmond knew
                continue
            new = pcmon_json(*r["args"], sock=d.sock)[0]
            windowed = "--since" in r["args"]
            old, new = dict(old, since=windowed), dict(new, since=windowed)
            what = f"format {fmt}: pcmon {' '.join(r['args'])}"
            if "targets" in old:
                (o,), (n,) = old["targets"], new["targets"]
                assert (o["slices"], n["slices"]) == (FIXTURE_SLICES, FIXTURE_SLICES_KEPT), (what, o, n)
                for k in ("name", "state", "elapsed_s", "start_wall", "interval_us"):
                    assert o[k] == n[k], (what, k, o[k], n[k])
                continue
            for part, of in (("sampling", sampling_of), ("calls", calls_of),
                             ("tables", tables_of)):
                o, n = of(old), of(new)
                if part in kept_by_time or not windowed:
                    assert o == n, (what, part, o, n)
                else:  # the whole life's totals, as one slice that the window cuts
                    assert o[:-1] == n[:-1], (what, part, o, n)
                    if n[-1] is not None:
                        assert n[-1]["slices"] == 1 and n[-1]["cut"], (what, part, n[-1])
            asked += 1
        assert asked >= 4, rec["replies"]
        # the phases (work_c only in the second) as the windows saw them
        wins = [sampling_of(r["reply"])[1] for r in rec["replies"]
                if r["args"][0] == "list" and "--since" in r["args"] and "--calls" not in r["args"]]
        assert len(wins) == 2, wins
        assert "work_c" not in [p[0] for p in wins[0]] and "work_c" in [p[0] for p in wins[1]]
        assert not any(l.startswith("pcmon: warning") for l in d.logtext().splitlines()), \
            d.logtext()
    finally:
        d.stop()


def test_format4_file_lists_as_written():
    """Format 4: sampling kept by time; the call table and the node tables not yet."""
    check_fixture(4, ("sampling",))


def test_format5_file_lists_as_written():
    """Format 5 as first written with the node tables' slices (a0d5da4): the call table's
    rows without the fields --when at probes added since, which load as 0."""
    check_fixture(5, ("sampling", "calls", "tables"))


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
