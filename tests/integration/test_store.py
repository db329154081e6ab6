#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The state directory: saves that fail (a full disk, a directory in the way) are shown in
`pcmon targets` and `pcmon status`, retried, and never cost what was saved before; a
restart lists what was saved; stale temporary files go; a format-1 file still loads, and a
broken one is refused with one line naming the field."""
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


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
