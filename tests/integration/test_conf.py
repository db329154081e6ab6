#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""pcmond's configuration file (docs/service.md): each error is one line naming file, line,
section and key, and --check-config exits 1 on it; a daemon starts the file's targets as
root with the settings asked; SIGHUP applies an edit (a section added, removed, changed,
unchanged) without a target losing results, and refuses a broken file whole; a restart
keeps the last run's targets apart (NAME@ID) and starts the file's again."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import PCMOND, ROOT, Daemon, cgroup2_root, held, pcmon_json, run_tests, spin_in, workload

SHIPPED = os.path.join(ROOT, "packaging", "pcmond.conf")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)


def check_config(path, *more):
    return subprocess.run([PCMOND, "--check-config", "--config", path, *more],
                          capture_output=True, text=True, timeout=30)


def targets(d):
    """Root's targets by name."""
    return {t["name"]: t for t in pcmon_json("targets", sock=d.sock)[0]["targets"]}


def log(d):
    with open(os.path.join(d.dir, "pcmond.log")) as f:
        return f.read()


def hup_and_wait(d, word):
    """SIGHUP, then wait for the log line that says the reload is done (@word: "reloaded"
    or "not reloaded")."""
    before = log(d).count(word)
    d.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 30
    while time.time() < deadline:
        if log(d).count(word) > before:
            return
        time.sleep(0.05)
    raise AssertionError(f"no '{word}' in the log after SIGHUP:\n{log(d)[-3000:]}")


def wait_samples(d, names, least=20, timeout=30):
    deadline = time.time() + timeout
    while True:
        ts = targets(d)
        if all(ts.get(n, {}).get("samples", 0) >= least for n in names):
            return ts
        if time.time() > deadline:
            raise AssertionError(f"too few samples in {names}: {ts}")
        time.sleep(0.3)


def test_errors_name_file_line_and_key():
    d = tempfile.mkdtemp(prefix="pcmon-conf-")
    cases = [
        ("bad number", "[target system]\nall = yes\ninterval = abc\n",
         r'^{f}:3: \[target system\] interval: "abc" is not a number of microseconds$'),
        ("out of range", "[daemon]\n\nmax-stack = 4096\n",
         r'^{f}:3: \[daemon\] max-stack: "4096" is not a number of frames from 1 to 512$'),
        ("unknown key", "[target system]\nall = yes\nintervall = 5000\n",
         r"^{f}:3: \[target system\] intervall: unknown key \(.*\)$"),
        ("unknown daemon key", "[daemon]\nstatedir = /x\n",
         r"^{f}:2: \[daemon\] statedir: unknown key \(.*\)$"),
        ("unknown section", "[daemon]\n[targets]\nall = yes\n",
         r"^{f}:2: unknown section \[targets\]: .*$"),
        ("no watch", "# nothing\n[target t]\ninterval = 5000\n",
         r"^{f}:2: \[target t\]: say what it watches: .*$"),
        ("pid", "[target t]\npid = 1\n", r"^{f}:2: \[target t\] pid: not a key here: .*$"),
        ("wrong enum", "[target t]\nall = yes\nunwind = sideways\n",
         r'^{f}:3: \[target t\] unwind: "sideways" is not one of fp\|dwarf\|auto$'),
        ("nodes without their program", "[target t]\nall = yes\nnode = f\nnode = g\nleg = 1:2\n",
         r"^{f}:1: \[target t\]: its nodes are in a program: name it, program = PATH$"),
        ("a relative program", "[target t]\nall = yes\nprogram = bin/x\nnode = f\n",
         r'^{f}:3: \[target t\] program: "bin/x" is not an absolute path \(.*\)$'),
        ("hist-arg before its node", "[target t]\nall = yes\nhist-arg = 1\n",
         r"^{f}:3: \[target t\] hist-arg: give it after the node it applies to$"),
        ("hist-arg out of range", "[target t]\nall = yes\nprogram = /x\nnode = f\nhist-arg = 6\n",
         r'^{f}:5: \[target t\] hist-arg: "6" is not an argument\'s number from 0 to 5$'),
        ("count", "[target t]\nall = yes\ncount = f\n",
         r"^{f}:3: \[target t\] count: not a key here: call counts need a process .*$"),
    ]
    for what, text, want in cases:
        f = os.path.join(d, "pcmond.conf")
        write(f, text)
        p = check_config(f)
        lines = p.stderr.splitlines()
        assert p.returncode == 1, (what, p)
        assert len(lines) == 1 and re.match(want.format(f=re.escape(f)), lines[0]), \
            (what, p.stderr)
    # a file named with --config must be there
    p = check_config(os.path.join(d, "missing.conf"))
    assert p.returncode == 1 and p.stderr == f"{d}/missing.conf: No such file or directory\n", p
    # several errors: each on its line, in the order of the file
    f = os.path.join(d, "many.conf")
    write(f, "[daemon]\nmax-stack = x\n[target a]\nall = maybe\n[b]\n")
    p = check_config(f)
    assert p.returncode == 1 and [l.split(":")[1] for l in p.stderr.splitlines()] == \
        ["2", "4", "5"], p.stderr
    # pcmond does not start on a broken file
    p = subprocess.run([PCMOND, "--foreground", "--config", f, "--socket", f"{d}/s",
                        "--state-dir", f"{d}/st"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and f"{f}:2: [daemon] max-stack" in p.stderr, p
    assert not os.path.exists(f"{d}/s")
    # a good file, the shipped one, and the shipped one with every line uncommented
    f = os.path.join(d, "good.conf")
    write(f, "[target t1]\nall = yes\ninterval = 52631\n")
    p = check_config(f)
    assert p.returncode == 0 and p.stdout == f"{f}: good: 1 target (t1)\n" and not p.stderr, p
    p = check_config(SHIPPED)
    assert p.returncode == 0 and "good: 0 targets" in p.stdout, p
    with open(SHIPPED) as src:
        on = [l[1:] if l.startswith(";") else l for l in src
              if l.startswith(("[", ";")) and not l.startswith(";debuginfod")]
    write(f, "".join(on))
    p = check_config(f)
    assert p.returncode == 0 and "2 targets (system, web-heap)" in p.stdout, (p, on)
    # the command line is checked with the file
    p = check_config(f, "--max-user-clients", "100")
    assert p.returncode == 1 and "max-user-clients" in p.stderr, p


def test_daemon_starts_the_files_targets():
    d = tempfile.mkdtemp(prefix="pcmon-conf-")
    f = os.path.join(d, "pcmond.conf")
    write(f, "[daemon]\nuser-targets = 3\n\n"
             "[target t1]\nall = yes\ninterval = 20000 ; 50 Hz\nunwind = fp\nmode = virtual\n")
    dm = Daemon(args=["--config", f]).start()
    spin = subprocess.Popen([workload("spinner"), "30"], stdout=subprocess.PIPE, text=True)
    try:
        ts = wait_samples(dm, ["t1"], least=5)
        t = ts["t1"]
        assert t["state"] == "running" and t["kind"] == "all", t
        assert t["owner"] == 0, t  # root's: pcmond started it
        assert t["interval_us"] == 20000 and t["mode"] == "VIRTUAL" and t["unwind"] == "fp", t
        status = pcmon_json("status", sock=dm.sock)[0]
        assert status["limits"]["targets_per_user"] == 3, status["limits"]  # [daemon]
        assert f"{f}:4: [target t1]: started target {t['id']}" in log(dm), log(dm)
    finally:
        spin.kill()
        spin.wait()
        dm.stop()
    # an option on the command line wins over [daemon]
    dm = Daemon(args=["--config", f, "--user-targets", "5"]).start()
    try:
        status = pcmon_json("status", sock=dm.sock)[0]
        assert status["limits"]["targets_per_user"] == 5, status["limits"]
    finally:
        dm.stop()


def test_a_cgroups_allocations_from_the_file():
    """[target] cgroup = DIR, alloc = yes, no-sample = yes: pcmond starts it on SIGHUP, and
    the allocations of a process in the cgroup are seen, every call; all = yes with alloc is
    refused when the file is checked, naming file, line and why."""
    cg = os.path.join(cgroup2_root(), f"pcmon-conf-alloc-{os.getpid()}")
    os.mkdir(cg)
    d = tempfile.mkdtemp(prefix="pcmon-conf-")
    f = os.path.join(d, "pcmond.conf")
    write(f, "[daemon]\nuser-targets = 3\n")
    dm = Daemon(args=["--config", f]).start()
    try:
        with held([workload("allocs"), 1]) as (w, pid, go):
            write(os.path.join(cg, "cgroup.procs"), str(pid))
            write(f, f"[target heap]\ncgroup = {cg}\nalloc = yes\nalloc-rate = 65536\n"
                     "no-sample = yes\n")
            hup_and_wait(dm, "reloaded")
            t = targets(dm)["heap"]
            assert t["kind"] == "cgroup" and t["alloc_rate"] == 65536 and "mode" not in t, t
            deadline = time.time() + 10
            while pcmon_json("list", "heap", "--alloc", sock=dm.sock)[0]["alloc"]["summary"][
                    "probed_files"] == 0 and time.time() < deadline:
                time.sleep(0.2)
            go()
            own = json.loads(w.stdout.readline())
            w.wait()
        s = pcmon_json("list", "heap", "--alloc", sock=dm.sock)[0]["alloc"]["summary"]
        calls = sum(v["blocks"] for v in own.values())
        assert calls <= s["calls"] <= calls + 20 and s["samples"] > 0, (s, own)
    finally:
        dm.stop()
        os.rmdir(cg)
    write(f, "[target everything]\nall = yes\nalloc = yes\n")
    p = check_config(f)
    assert p.returncode == 1 and f"{f}:1: [target everything]: alloc = yes watches a cgroup" \
        in p.stderr, p


def test_reload_and_restart():
    root = cgroup2_root()
    cga = os.path.join(root, f"pcmon-conf-a-{os.getpid()}")
    cgb = os.path.join(root, f"pcmon-conf-b-{os.getpid()}")
    os.mkdir(cga)
    os.mkdir(cgb)
    d = tempfile.mkdtemp(prefix="pcmon-conf-")
    f = os.path.join(d, "pcmond.conf")
    write(f, "[target sys]\nall = yes\ninterval = 20000\n\n"
             f"[target a]\ncgroup = {cga}\ninterval = 1000\n\n"
             f"[target keep]\ncgroup = {cgb}\ninterval = 1000\nmode = virtual\n")
    # in their cgroups before pcmond looks: a process is in the first target that takes it,
    # and the all target takes every process it sees first
    spins, dm = [spin_in(cga), spin_in(cgb)], None
    try:
        dm = Daemon(args=["--config", f]).start()
        before = wait_samples(dm, ["a", "keep"], least=50)
        assert {n: t["state"] for n, t in before.items()} == \
            {"sys": "running", "a": "running", "keep": "running"}, before

        # remove a, change sys, keep keep (its keys in another order), add fresh; and a
        # [daemon] setting, which waits for a restart
        write(f, "[daemon]\nuser-targets = 4\n\n"
                 f"[target keep]\nmode = virtual   ; the same settings\ncgroup = {cgb}\n"
                 "interval = 1000\n\n"
                 "[target sys]\nall = yes\ninterval = 25000\n\n"
                 f"[target fresh]\ncgroup = {cga}\n")
        hup_and_wait(dm, "reloaded")
        assert f"{f}:2: [daemon] user-targets: changed; pcmond takes it at its next start" \
            in log(dm), log(dm)[-2000:]
        assert pcmon_json("status", sock=dm.sock)[0]["limits"]["targets_per_user"] == 16
        after = targets(dm)
        old_sys = f"sys@{before['sys']['id']}"
        assert set(after) == {"sys", old_sys, "a", "keep", "fresh"}, after
        # removed: stopped, kept with its results
        assert after["a"]["id"] == before["a"]["id"] and after["a"]["state"] == "stopped"
        assert after["a"]["samples"] >= before["a"]["samples"], (before["a"], after["a"])
        # changed: the old one stopped with its results, a new one with the new settings
        assert after[old_sys]["id"] == before["sys"]["id"]
        assert after[old_sys]["state"] == "stopped"
        assert after[old_sys]["samples"] >= before["sys"]["samples"]
        assert after["sys"]["id"] != before["sys"]["id"] and after["sys"]["state"] == "running"
        assert after["sys"]["interval_us"] == 25000 and after["sys"]["owner"] == 0
        # unchanged: the same target, still running, still counting
        assert after["keep"]["id"] == before["keep"]["id"]
        assert after["keep"]["state"] == "running"
        assert after["keep"]["samples"] >= before["keep"]["samples"]
        # new: started, on the cgroup the removed one left
        assert after["fresh"]["state"] == "running" and after["fresh"]["owner"] == 0
        wait_samples(dm, ["fresh"], least=20)

        # a broken file changes nothing
        good = open(f).read()
        write(f, good + "\n[target broken]\nall = yes\ninterval = abc\n")
        state = {n: (t["id"], t["state"]) for n, t in targets(dm).items()}
        hup_and_wait(dm, "not reloaded")
        assert {n: (t["id"], t["state"]) for n, t in targets(dm).items()} == state
        assert re.search(rf'{re.escape(f)}:\d+: \[target broken\] interval: "abc" is not a '
                         r"number of microseconds", log(dm)), log(dm)[-2000:]
        assert dm.alive()
        write(f, good)
        hup_and_wait(dm, "reloaded")
        assert {n: (t["id"], t["state"]) for n, t in targets(dm).items()} == state

        # a restart: the last run's targets come back stopped with their results, renamed;
        # the file's start again under their names
        last = wait_samples(dm, ["keep", "fresh"], least=50)
        dm.stop()
        dm = Daemon(state_dir=dm.state, args=["--config", f]).start()
        again = targets(dm)
        for n in ("sys", "keep", "fresh"):
            old = f"{n}@{last[n]['id']}"
            assert again[old]["state"] == "stopped", again
            assert again[old]["samples"] >= last[n]["samples"], (last[n], again[old])
            assert again[n]["state"] == "running" and again[n]["id"] != last[n]["id"], again
        assert again["a"]["state"] == "stopped" and again[old_sys]["state"] == "stopped"
        assert len(again) == 8, again
        assert pcmon_json("status", sock=dm.sock)[0]["limits"]["targets_per_user"] == 4
    finally:
        for p in spins:
            p.kill()
            p.wait()
        if dm:
            dm.stop()
        for cg in (cga, cgb):
            os.rmdir(cg)


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
