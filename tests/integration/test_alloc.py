#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Allocations (--alloc): sampled by bytes in BPF at the allocator's functions, each sample
weighted as pprof weighs a heap profile's, live until freed. Checked against a program that
counts what it allocates at three sites (freed at once, kept until exit, calloc then realloc):
every allocation call seen, allocated bytes per site within 4 standard errors (and 10 %),
live bytes at exit right, and bad settings refused."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, cgroup2_root, first_json_line, held, pcmon, pcmon_json, run_tests, workload

SITES = ("churn", "keep", "grow")
# a sample every 64 KiB: keep() allocates a hundredth of the bytes, some 2 MB in 3 s under
# the probes' cost here, and has some 30 samples at this rate (about 4 at the default)
RATE = 65536


def own_calls(own):
    # grow() counts its calloc and its realloc as two blocks
    return sum(own[s]["blocks"] for s in SITES)


def check_sites(alloc, own, what):
    s = alloc["summary"]
    procs = {p["name"]: p for p in alloc["procedures"]}
    assert s["ring_full"] == 0 and s["records_lost"] == 0 and s["live_full"] == 0, s
    for site in SITES:
        p, o = procs.get(site), own[site]
        assert p, (what, site, [q["procedure"] for q in alloc["procedures"]])
        err = p["alloc_bytes_stderr"]
        # 4 standard errors, and no tighter than 2 %: the standard error is itself estimated
        tol = max(4 * err, 0.02 * o["bytes"])
        assert abs(p["alloc_bytes"] - o["bytes"]) <= tol, \
            (what, site, p["alloc_bytes"], o["bytes"], err)
        assert p["alloc_bytes"] == p["deep_alloc_bytes"], p  # (they call nothing that allocates)
        # live at exit: keep's blocks, and nothing of the others (freed, or ended by realloc)
        if o["live_bytes"]:
            assert abs(p["inuse_bytes"] - o["live_bytes"]) <= max(4 * p["inuse_bytes_stderr"],
                                                                  0.02 * o["live_bytes"]), \
                (what, site, p["inuse_bytes"], o["live_bytes"])
        else:
            assert p["inuse_bytes"] == 0, (what, site, p)
    main = procs["main"]
    assert main["alloc_bytes"] == 0 and main["deep_alloc_bytes"] >= sum(
        procs[x]["alloc_bytes"] for x in SITES) - 1, main
    total = sum(o["bytes"] for o in own.values())
    assert abs(s["alloc_bytes"] - total) <= max(4 * s["alloc_bytes_stderr"], 0.02 * total), \
        (what, s, total)


def test_run_sees_every_call_and_weighs_sites():
    """pcmon run --alloc: the command's allocator is probed before it runs (a copy of
    pcmon, held before its exec, maps the same libc), so every allocation call is seen:
    with uprobe sessions (a return probe only where the entry asks: kernel 6.13 on), and
    with a probe at each entry and return, as on older kernels."""
    release = tuple(int(x) for x in os.uname().release.split(".")[:2])
    for probes in ("session", "entry+return"):
        env = dict(os.environ)
        if probes != "session":
            env["PCMON_ALLOC_NO_SESSION"] = "1"
        elif release < (6, 13):
            continue
        listing, p = pcmon_json("run", "--alloc", "--alloc-rate", RATE, "--no-sample", "--",
                                workload("allocs"), 3, env=env)
        own = first_json_line(p.stdout)
        alloc = listing["alloc"]
        s = alloc["summary"]
        assert listing["target"]["alloc_probes"] == probes, listing["target"]
        # its calls, and a few of libc's own as the program starts and ends (stdio's buffer)
        assert own_calls(own) <= s["calls"] <= own_calls(own) + 20, (probes, s["calls"], own)
        assert s["samples"] >= 100, s
        check_sites(alloc, own, probes)


def held_allocs(d, secs, *opts):
    """allocs for @secs, started first and held until a target with --alloc watches it:
    (target, the program's own figures)."""
    flag = tempfile.mktemp(prefix="pcmon-alloc-go-")
    w = subprocess.Popen([workload("allocs"), str(secs), "--wait", flag], stdout=subprocess.PIPE,
                         text=True)
    try:
        pid = json.loads(w.stdout.readline())["pid"]
        tid = pcmon("start", "--pid", pid, "--alloc", *opts, sock=d.sock, check=0).stdout.strip()
        open(flag, "w").close()
        own = json.loads(w.stdout.readline())
        w.wait()
        return tid, own
    finally:
        if w.poll() is None:
            w.kill()
        if os.path.exists(flag):
            os.unlink(flag)


def test_pid_target_live_at_exit():
    """start --pid --alloc on a process started before it: every call after the start is
    seen, live bytes at exit are the blocks it kept, and the sampling instrument beside it
    goes on as before; its results file keeps the totals."""
    d = Daemon().start()
    try:
        tid, own = held_allocs(d, 3, "--unwind", "fp", "--alloc-rate", RATE)
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        alloc = listing["alloc"]
        assert own_calls(own) <= alloc["summary"]["calls"] <= own_calls(own) + 20, \
            (alloc["summary"], own)
        check_sites(alloc, own, "--pid")
        assert listing["summary"]["counted"] > 0, listing["summary"]
        text = pcmon("list", tid, sock=d.sock, check=0).stdout
        assert "allocations, sampled every 64.0 KiB" in text and "allocs.keep" in text, text
        alone = pcmon("list", tid, "--alloc", sock=d.sock, check=0).stdout
        assert "allocs.keep" in alone and "by shallow count" not in alone, alone
        # by live bytes (keep holds them all), or --sort alloc by allocated bytes
        first = alloc["procedures"][0]["name"]
        assert first == "keep", [p["name"] for p in alloc["procedures"]]
        by_alloc = pcmon_json("list", tid, "--alloc", "--sort", "alloc", sock=d.sock)[0]["alloc"]
        rows = [p["alloc_bytes"] for p in by_alloc["procedures"]]
        assert by_alloc["sort"] == "alloc" and rows == sorted(rows, reverse=True), rows
        assert by_alloc["procedures"][0]["name"] in ("churn", "grow"), by_alloc["procedures"][0]
        # --by applies to the sampling table, not (yet) to this one: said, not silent
        assert "not_applied" not in alloc["summary"], alloc["summary"]
        by = pcmon_json("list", tid, "--by", "thread", sock=d.sock)[0]["alloc"]
        assert by["summary"]["not_applied"] == "--by", by["summary"]
        text = pcmon("list", tid, "--by", "thread", sock=d.sock, check=0).stdout
        assert "--by does not apply to allocations yet" in text, text
        # without --alloc, a target that carries both exports its samples (the allocations'
        # profile is not mixed in), and --when applies to them
        plain = pcmon("export", tid, "--format", "folded", sock=d.sock).stdout
        total = sum(int(l.rsplit(" ", 1)[1]) for l in plain.splitlines() if l.strip())
        assert total == listing["summary"]["counted"], (total, listing["summary"])
        p = pcmon("export", tid, "--format", "folded", "--when", "allocs.main->*", sock=d.sock)
        assert p.returncode == 0 and p.stdout.strip(), p
        # its results file keeps what it lists from: the table, and the stacks to export
        folded = pcmon("export", tid, "--alloc", "--format", "folded", sock=d.sock).stdout
        assert d.stop() == 0, d.logtext()
        d = Daemon(state_dir=d.state).start()
        again = pcmon_json("list", tid, sock=d.sock)[0]["alloc"]
        for k in ("alloc_bytes", "inuse_bytes", "alloc_bytes_stderr", "samples"):
            assert again["summary"][k] == alloc["summary"][k], (k, again["summary"])
        assert again["procedures"] == alloc["procedures"], (again["procedures"][:3],
                                                            alloc["procedures"][:3])
        resorted = pcmon_json("list", tid, "--sort", "alloc", sock=d.sock)[0]["alloc"]
        assert resorted["procedures"][0]["name"] in ("churn", "grow"), resorted["procedures"][:2]
        p = pcmon("export", tid, "--alloc", "--format", "folded", sock=d.sock)
        assert p.returncode == 0 and p.stdout == folded, (p, folded)
    finally:
        assert d.stop() == 0, d.logtext()


def test_exports_as_go_heap_profiles():
    """export --alloc: a pprof profile with Go's heap profiles' four sample types, which
    `go tool pprof` reads, each site's values the listing's; folded stacks and the flame
    graph by the value asked for."""
    d = Daemon().start()
    try:
        tid, own = held_allocs(d, 2, "--no-sample", "--alloc-rate", RATE)
        alloc = pcmon_json("list", tid, sock=d.sock)[0]["alloc"]
        by = {p["name"]: p for p in alloc["procedures"]}
        out = os.path.join(d.dir, "heap.pb.gz")
        pcmon("export", tid, "--alloc", "--format", "pprof", "-o", out, sock=d.sock, check=0)
        env = dict(os.environ, HOME=os.environ.get("HOME", "/root"))
        for index, key in (("alloc_space", "alloc_bytes"), ("inuse_space", "inuse_bytes"),
                           ("alloc_objects", "alloc_objects")):
            p = subprocess.run(["go", "tool", "pprof", "-sample_index=" + index, "-raw", out],
                               capture_output=True, text=True, timeout=120, env=env)
            assert p.returncode == 0, p.stderr
            assert "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes" \
                in p.stdout, p.stdout[:600]
        # -traces: each sample's value (in bytes, asked so) and its stack, leaf first
        p = subprocess.run(["go", "tool", "pprof", "-traces", "-sample_index=alloc_space",
                            "-unit=B", out], capture_output=True, text=True, timeout=120, env=env)
        sums = {}
        for block in p.stdout.split("-----------+")[1:]:
            for line in block.splitlines():
                m = re.match(r"\s*(\d+)B\s+(\S+)$", line)
                if m:
                    sums[m.group(2)] = sums.get(m.group(2), 0) + int(m.group(1))
        for site in SITES:
            assert abs(sums.get(site, 0) - by[site]["alloc_bytes"]) <= 2, (site, sums, by[site])
        assert "kind:" not in p.stdout, p.stdout[:800]
        folded = pcmon("export", tid, "--alloc", "--alloc-value", "alloc_space", "--format",
                       "folded", sock=d.sock, check=0).stdout
        got = {}
        for line in folded.splitlines():
            stack, n = line.rsplit(" ", 1)
            leaf = stack.split(";")[-1]
            got[leaf] = got.get(leaf, 0) + int(n)
        for site in SITES:
            assert abs(got[site] - by[site]["alloc_bytes"]) <= 2, (site, got, by[site])
        live = pcmon("export", tid, "--alloc", "--format", "folded", sock=d.sock,
                     check=0).stdout
        assert [l.split(";")[-1].split()[0] for l in live.splitlines()] == ["keep"], live
        svg = os.path.join(d.dir, "f.svg")
        pcmon("flamegraph", tid, "--alloc", "--alloc-value", "alloc_space", "-o", svg,
              sock=d.sock, check=0)
        text = open(svg).read()
        assert "churn" in text and "grow" in text and "keep" in text, text[:400]
        p = pcmon("export", tid, "--alloc", "--alloc-value", "nope", "--format", "folded",
                  sock=d.sock)
        assert p.returncode == 2 and "--alloc-value" in p.stderr, p
        for opt in (("--by", "comm"), ("--when", "main->*")):
            p = pcmon("export", tid, "--alloc", "--format", "folded", *opt, sock=d.sock)
            assert p.returncode != 0 and "does not apply to --alloc" in p.stderr, (opt, p)
    finally:
        assert d.stop() == 0, d.logtext()


def test_cxx_new_charged_to_its_caller():
    """C++'s new: libstdc++'s operator new keeps no frame pointer, so the walk by frame
    pointers skips the function that called it; the first frames unwound again by their CFI
    put it back. Each site's bytes, deep, within 4 standard errors of its own count."""
    listing, p = pcmon_json("run", "--alloc", "--alloc-rate", RATE, "--no-sample", "--",
                            workload("cxxallocs"), 2)
    own = first_json_line(p.stdout)
    alloc = listing["alloc"]
    assert alloc["summary"]["ring_full"] == 0, alloc["summary"]
    by = {q["name"]: q for q in alloc["procedures"]}
    new = next(q for q in alloc["procedures"] if q["name"].startswith("operator new"))
    assert new["alloc_bytes"] > 0.9 * alloc["summary"]["alloc_bytes"], (new, alloc["summary"])
    for site, name in (("make_small", "make_small()"), ("make_big", "make_big(unsigned long)")):
        q, o = by.get(name), own[site]
        assert q, (name, sorted(by))
        tol = max(4 * q["deep_alloc_bytes_stderr"], 0.02 * o["bytes"])
        assert abs(q["deep_alloc_bytes"] - o["bytes"]) <= tol, (site, q, o)
        assert q["deep_alloc_bytes"] <= by["main"]["deep_alloc_bytes"], (q, by["main"])


def allochold(d, between):
    """allochold: 64 blocks of 1 MiB held, @between(target) called, all freed: (the
    summary once held, the summary at the end)."""
    base = tempfile.mktemp(prefix="pcmon-allochold-")
    w = subprocess.Popen([workload("allochold"), "64", base], stdout=subprocess.PIPE, text=True)
    try:
        pid = json.loads(w.stdout.readline())["pid"]
        tid = pcmon("start", "--pid", pid, "--alloc", "--no-sample", sock=d.sock,
                    check=0).stdout.strip()
        open(base + ".go", "w").close()
        assert w.stdout.readline().strip() == "held"
        held = pcmon_json("list", tid, sock=d.sock)[0]["alloc"]["summary"]
        assert abs(held["inuse_bytes"] - (64 << 20)) <= 4 * held["inuse_bytes_stderr"] + (1 << 20), held
        assert held["inuse_objects"] > 0, held
        after = between(tid)
        open(base + ".free", "w").close()
        assert w.stdout.readline().strip() == "freed"
        if after:
            after(tid)
        open(base + ".end", "w").close()
        w.wait()
        return held, pcmon_json("list", tid, sock=d.sock)[0]["alloc"]["summary"]
    finally:
        if w.poll() is None:
            w.kill()
        for ext in (".go", ".free", ".end"):
            if os.path.exists(base + ext):
                os.unlink(base + ext)


def test_frees_seen_while_paused():
    """A paused target takes no new samples but still sees the frees of the blocks it
    sampled before: 64 blocks of 1 MiB held, the target paused, all freed, resumed: nothing
    is live (64 MiB stayed live when a pause hid the frees)."""
    d = Daemon().start()
    try:
        def pause(tid):
            pcmon("pause", tid, sock=d.sock, check=0)
            return lambda tid: pcmon("resume", tid, sock=d.sock, check=0)
        held, s = allochold(d, pause)
        assert s["inuse_bytes"] == 0 and s["inuse_objects"] == 0, s
        assert s["alloc_bytes"] == held["alloc_bytes"] and s["frees_lost"] == 0, (s, held)
    finally:
        assert d.stop() == 0, d.logtext()


def test_zero_forgets_the_blocks_before():
    """After zero, the frees of blocks sampled before it are neither live nor lost."""
    d = Daemon().start()
    try:
        held, s = allochold(d, lambda tid: pcmon("zero", tid, sock=d.sock, check=0) and None)
        assert s["inuse_bytes"] == 0 and s["alloc_bytes"] == 0 and s["frees_lost"] == 0, s
    finally:
        assert d.stop() == 0, d.logtext()


def test_an_allocator_of_its_own_by_name():
    """--alloc-functions: a program's own allocator, its functions named (glibc's are then
    not probed): every call seen, from its first (the command's own file is probed before
    it runs), bytes and live bytes within 4 standard errors; bad specs refused."""
    listing, p = pcmon_json("run", "--alloc", "--alloc-functions",
                            "malloc=pool_alloc,free=pool_free", "--alloc-rate", 4096,
                            "--no-sample", "--", workload("bumpalloc"), 20000)
    own = first_json_line(p.stdout)
    s = listing["alloc"]["summary"]
    assert s["calls"] == own["blocks"], (s, own)  # (its malloc of the array: not glibc's)
    assert abs(s["alloc_bytes"] - own["bytes"]) <= 4 * s["alloc_bytes_stderr"], (s, own)
    assert abs(s["inuse_bytes"] - own["live_bytes"]) <= 4 * s["inuse_bytes_stderr"], (s, own)
    top = listing["alloc"]["procedures"][0]
    assert top["name"] == "make_blocks" and top["alloc_bytes"] == s["alloc_bytes"], top
    for spec, why in (("malloc", "not ROLE=NAME"), ("new=x", "no role 'new'"),
                      ("free=pool_free", "at least one function that allocates")):
        r = pcmon("run", "--alloc", "--alloc-functions", spec, "--", "true")
        assert r.returncode == 2 and why in r.stderr, (spec, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_cgroup_target_probes_its_processes():
    """start --cgroup DIR --alloc: a process in the cgroup before the start, and one moved in
    after it (found at the next look at its cgroup.procs, once a second), each have every
    allocation call seen and weighed, as a --pid target's."""
    root = cgroup2_root()
    cg = tempfile.mkdtemp(prefix="pcmon-alloc-", dir=root)
    d = Daemon().start()
    try:
        with held([workload("allocs"), 2]) as (w0, pid0, go0), \
                held([workload("allocs"), 2]) as (w1, pid1, go1):
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(pid0))
            tid = pcmon("start", "--cgroup", cg, "--alloc", "--alloc-rate", RATE,
                        "--no-sample", sock=d.sock).stdout.strip()
            probed = pcmon_json("list", tid, "--alloc", sock=d.sock)[0]["alloc"]["summary"]
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(pid1))
            deadline = time.time() + 10
            while time.time() < deadline:
                s = pcmon_json("list", tid, "--alloc", sock=d.sock)[0]["alloc"]["summary"]
                if s["probed_files"] >= 2 * probed["probed_files"] > 0:
                    break
                time.sleep(0.2)
            assert s["probed_files"] >= 2 * probed["probed_files"] > 0, (probed, s)
            go0()
            go1()
            owns = [json.loads(w.stdout.readline()) for w in (w0, w1)]
            w0.wait()
            w1.wait()
        own = {k: {f: owns[0][k][f] + owns[1][k][f] for f in ("blocks", "bytes", "live_bytes")}
               for k in SITES}
        alloc = pcmon_json("list", tid, "--alloc", sock=d.sock)[0]["alloc"]
        assert own_calls(own) <= alloc["summary"]["calls"] <= own_calls(own) + 40, \
            (alloc["summary"], own)
        check_sites(alloc, own, "--cgroup")
    finally:
        assert d.stop() == 0, d.logtext()
        os.rmdir(cg)


def test_rate_and_targets_refused_clearly():
    """A rate out of range, and a target whose objects are not known in advance, are refused
    with a line that says what to do."""
    d = Daemon().start()
    try:
        p = pcmon("start", "--pid", os.getpid(), "--alloc", "--alloc-rate", 0, sock=d.sock)
        assert p.returncode != 0 and "--alloc-rate" in p.stderr, p
        p = pcmon("start", "--all", "--alloc", sock=d.sock)
        assert p.returncode != 0 and "--alloc watches a process or a cgroup" in p.stderr, p
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    finally:
        assert d.stop() == 0, d.logtext()


if __name__ == "__main__":
    run_tests(globals())
