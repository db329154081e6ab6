#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Java frames (docs/java.md) against tests/workloads/java/Phases.java, a program that times
its own methods with the JVM's thread CPU clock, on the JDK there is (Debian's OpenJDK 17):
with no JVM flag, launched by `pcmon run`, attached by --pid after it started, in a
--cgroup, beside everything (--all), with --unwind fp, with frame pointers and a perf map,
each of alpha, beta (through an interface) and gamma (through a lambda) within 3 pp of its
own share, the work's samples named and walked to main, their lines from the class's line
table; every other JDK under /usr/lib/jvm (Temurin 25); REAL time of a parked thread
charged to its Java caller; C2's inlined methods (JavaWork's chain of eight calls); code
deoptimized and compiled again all along (Churn); what could not be walked flagged `java`,
never misnamed."""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, Skip, cgroup2_root, charged, first_json_line, pcmon, pcmon_json, procs, run_tests, share_tolerance_pp

CLASSES = os.path.join(os.path.dirname(__file__), "..", "..", ".output", "workloads", "java")
METHODS = ("alpha", "beta", "gamma")


def java():
    exe = shutil.which("java")
    if not exe:
        raise Skip("no java (apt-get install openjdk-17-jdk-headless)")
    if not os.path.exists(os.path.join(CLASSES, "Phases.class")):
        raise Skip(f"no Phases.class under {CLASSES} (make workloads, with javac)")
    return exe


def check_shares(listing, own, what):
    """alpha, beta and gamma's shares among themselves, within 3 pp (wider only where the
    samples are too few for it: 4 sigma) of what the program measured."""
    p = procs(listing)
    got = {m: p.get(f"java.Phases.{m}", {"deep": 0})["deep"] for m in METHODS}
    n = sum(got.values())
    assert n >= 500, f"{what}: only {n} samples of the three methods ({got})"
    for m in METHODS:
        want = own[m]
        tol = share_tolerance_pp(want, n, 3.0)
        assert abs(got[m] / n - want) * 100 <= tol, \
            f"{what}: {m} pcmon {got[m] / n:.4f} vs program {want:.4f} (tolerance {tol:.2f} pp, {n})"
    return n


def check_named(listing, what, cls="Phases", methods=METHODS):
    """The Java main thread's samples (those under libjli's JavaMain): at least 85 % of them
    walked through their Java frames to CLASS.main, and what was not walked flagged."""
    p = procs(listing)
    thread = p["libjli.so.JavaMain"]["deep"]
    named = p[f"java.{cls}.main"]["deep"]
    work = sum(p.get(f"java.{cls}.{m}", {"deep": 0})["deep"] for m in methods)
    assert named >= 0.85 * thread, f"{what}: {named} of {thread} samples of the main thread reach Phases.main"
    assert work <= named, (work, named)
    # (foreign: a sample charged to no named procedure; JIT code unwalked would be)
    assert listing["summary"]["foreign"] <= 0.03 * listing["summary"]["counted"], listing["summary"]
    cut = listing["summary"]["cut_short_by_reason"]
    assert "java" in cut, cut
    # (a stack cut short at a Java frame keeps what was walked: never more than a few)
    assert cut["java"] <= 0.05 * listing["summary"]["counted"], cut


def test_run_no_flags():
    """`pcmon run -- java -cp DIR Phases`: the three methods' shares, named and walked."""
    exe = java()
    listing, p = pcmon_json("run", "--interval", 1000, "--", exe, "-cp", CLASSES, "Phases", 6)
    own = first_json_line(p.stdout)
    n = check_shares(listing, own, "run")
    check_named(listing, "run")
    names = procs(listing)
    # the JIT's own threads keep their native frames
    assert not [k for k in names if k.startswith("java.") and "Phases" not in k and
                names[k]["shallow"] > 0.05 * n], [k for k in names if k.startswith("java.")][:20]
    print(f"  run: {n} samples of the three, "
          + ", ".join(f"{m} {names[f'java.Phases.{m}']['deep'] / n:.3f} (own {own[m]:.3f})" for m in METHODS))


def test_unwind_fp_still_walks_java():
    """--unwind fp: once the engine found the JVM, BPF sends its samples with their stacks
    (the kernel's frame-pointer walk stops in JIT code): the same shares, walked to main."""
    exe = java()
    listing, p = pcmon_json("run", "--unwind", "fp", "--interval", 1000, "--", exe, "-cp",
                            CLASSES, "Phases", 6)
    own = first_json_line(p.stdout)
    n = check_shares(listing, own, "--unwind fp")
    check_named(listing, "--unwind fp")
    print(f"  --unwind fp: {n} samples of the three")


def test_pid_attach_and_lines():
    """A JVM started before pcmond (warm: its methods compiled), attached by --pid with no
    flag; then --lines on a Java method gives lines of Phases.java."""
    exe = java()
    d = Daemon().start()
    proc = subprocess.Popen([exe, "-cp", CLASSES, "Phases", "7"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        tid = pcmon("start", "--pid", proc.pid, "--interval", 1000, sock=d.sock, check=0).stdout.strip()
        out, _ = proc.communicate(timeout=120)
        own = first_json_line(out)
        time.sleep(0.5)
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        # (the program's shares are of its whole run; the target saw all but its first 1.5 s,
        # whose blocks are picked at random as the rest)
        n = check_shares(listing, own, "--pid")
        check_named(listing, "--pid")
        lines = pcmon_json("list", tid, "--lines", "java.Phases.alpha", sock=d.sock)[0]["lines"]
        rows = {l["line"]: l["count"] for l in lines["lines"] if l["file"].endswith("Phases.java")}
        assert rows and sum(rows.values()) >= 0.8 * lines["count"], lines
        # alpha's lines (0: a pc with no line, at most a few), most of them its loop's:
        # leaf, inlined into it, runs there
        src = open(os.path.join(os.path.dirname(__file__), "..", "workloads", "java",
                                "Phases.java")).read().splitlines()
        first = next(i for i, l in enumerate(src, 1) if "static long alpha(" in l)
        loop = next(i for i, l in enumerate(src, 1) if i > first and "s += leaf(i);" in l)
        assert all(l == 0 or first <= l <= first + 5 for l in rows), (first, rows)
        assert rows.get(0, 0) <= 0.05 * lines["count"], rows
        # (the `for` line, whose back edge is the debug-info point that follows the loop's code)
        assert max(rows, key=rows.get) in (loop - 1, loop), (loop, rows)
        # WHEN over Java names: gamma's samples, all and only (the unwalkable, which match no
        # pattern, counted apart)
        when = pcmon_json("list", tid, "--when", "java.Phases.gamma->*", sock=d.sock)[0]
        assert charged(when) == procs(listing)["java.Phases.gamma"]["deep"], \
            (charged(when), procs(listing)["java.Phases.gamma"])
        # a critical section over a Java method: alpha's samples
        crit = pcmon_json("list", tid, "--critical", "hot=*->java.Phases.alpha->*", sock=d.sock)[0]
        got = {c["name"]: c["count"] for c in crit["summary"]["critical"]}
        assert got.get("hot") == procs(listing)["java.Phases.alpha"]["deep"], (got, procs(listing)["java.Phases.alpha"])
        # the exports: folded stacks run from the native root through Phases.main
        folded = pcmon("export", "--format", "folded", tid, sock=d.sock, check=0).stdout
        alpha = [l for l in folded.splitlines() if ";Phases.alpha" in l]
        assert alpha and all(";Phases.main;" in l and l.startswith("clone3;") for l in alpha), alpha[:3]
        # the exports' functions: each method with its source file and first line
        prof = pcmon_json("export", "--format", "json", tid, sock=d.sock)[0]["profile"]
        fns = {f["name"]: f for f in prof["functions"] if f["module"] == "java"}
        first = next(i for i, l in enumerate(src, 1) if "static long alpha(" in l)
        assert fns["Phases.alpha"]["file"] == "Phases.java" and \
            first <= fns["Phases.alpha"]["line"] <= first + 2, fns["Phases.alpha"]
        # the flame graph and diff over Java frames (the run against itself: nothing changed)
        svg = os.path.join(d.dir, "java.svg")
        pcmon("flamegraph", tid, "-o", svg, sock=d.sock, check=0)
        assert "Phases.alpha" in open(svg).read()
        same, _ = pcmon_json("diff", tid, tid, sock=d.sock)
        rows_d = {r["procedure"]: r for r in same["procedures"]}
        assert any(k.endswith("Phases.alpha") for k in rows_d), sorted(rows_d)[:10]
        assert not any(r.get("significant") for r in rows_d.values()), \
            [r for r in rows_d.values() if r.get("significant")][:3]
        print(f"  --pid: {n} samples of the three; alpha's lines {sorted(rows.items())}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert d.stop() == 0, d.logtext()


def test_real_parked_thread_charged_to_java_caller():
    """With REAL, a thread parked in LockSupport.parkNanos (Phases --nap) is charged to nap,
    its Java caller, through Unsafe.park's native frames: about its whole wall time (with
    either unwinder: with --unwind fp a JVM's intervals carry their stacks too)."""
    exe = java()
    for unwind in ("auto", "fp"):
        listing, p = pcmon_json("run", "--real", "--unwind", unwind, "--", exe, "-cp", CLASSES,
                                "Phases", 3, "--nap")
        names = procs(listing)
        nap = names.get("java.Phases.nap", {"deep": 0})["deep"]
        park = names.get("java.jdk.internal.misc.Unsafe.park", {"deep": 0})["deep"]
        # (10 ms ticks over some 3 s: the napper's own, about 300)
        assert nap >= 200 and park >= 0.9 * nap, (unwind, nap, park)
        check_shares_rough(names)


def check_shares_rough(names):
    got = {m: names.get(f"java.Phases.{m}", {"deep": 0})["deep"] for m in METHODS}
    assert all(got.values()), got


def test_other_jdks():
    """Each other JDK under /usr/lib/jvm (Temurin 25 here): walked and named, the three
    shares as the program measured (compiled frames without their inlined methods from JDK
    23 on: docs/java.md)."""
    seen = set()
    ran = 0
    for exe in sorted(glob.glob("/usr/lib/jvm/*/bin/java")):
        real = os.path.realpath(exe)
        if real in seen or real == os.path.realpath(shutil.which("java") or ""):
            continue
        seen.add(real)
        listing, p = pcmon_json("run", "--interval", 1000, "--", exe, "-cp", CLASSES, "Phases", 5)
        own = first_json_line(p.stdout)
        n = check_shares(listing, own, exe)
        check_named(listing, exe)
        print(f"  {exe}: {n} samples of the three")
        ran += 1
    if not ran:
        raise Skip("no JDK under /usr/lib/jvm but the default one")


def test_perf_map_and_frame_pointers_change_nothing():
    """A JVM run with -XX:+PreserveFramePointer that wrote a perf map (jcmd Compiler.perfmap)
    lists as one with neither: its Java frames walked and named the same way."""
    exe = java()
    jcmd = shutil.which("jcmd")
    if not jcmd:
        raise Skip("no jcmd")
    d = Daemon().start()
    proc = subprocess.Popen([exe, "-XX:+PreserveFramePointer", "-cp", CLASSES, "Phases", "6"],
                            stdout=subprocess.PIPE, text=True)
    perf_map = f"/tmp/perf-{proc.pid}.map"
    try:
        time.sleep(1.5)
        subprocess.run([jcmd, str(proc.pid), "Compiler.perfmap"], capture_output=True, timeout=60)
        assert os.path.exists(perf_map), "jcmd wrote no perf map"
        tid = pcmon("start", "--pid", proc.pid, "--interval", 1000, sock=d.sock, check=0).stdout.strip()
        out, _ = proc.communicate(timeout=120)
        time.sleep(0.5)
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        n = check_shares(listing, first_json_line(out), "perf map")
        check_named(listing, "perf map")
        print(f"  with a perf map and frame pointers: {n} samples of the three")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if os.path.exists(perf_map):
            os.unlink(perf_map)
        assert d.stop() == 0, d.logtext()


def test_cgroup_target():
    """A --cgroup target over a JVM moved into its cgroup after it started: the same."""
    exe = java()
    root = cgroup2_root()
    cg = os.path.join(root, f"pcmon-java-{os.getpid()}")
    os.mkdir(cg)
    d = Daemon().start()
    proc = subprocess.Popen([exe, "-cp", CLASSES, "Phases", "6"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1)
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(proc.pid))
        tid = pcmon("start", "--cgroup", cg, "--interval", 1000, sock=d.sock, check=0).stdout.strip()
        out, _ = proc.communicate(timeout=120)
        time.sleep(0.5)
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        n = check_shares(listing, first_json_line(out), "--cgroup")
        check_named(listing, "--cgroup")
        print(f"  --cgroup: {n} samples of the three")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert d.stop() == 0, d.logtext()
        os.rmdir(cg)


def test_all_target():
    """An --all target: the JVM's samples beside everything else's, the three methods' shares
    among themselves as the program measured."""
    exe = java()
    d = Daemon().start()
    try:
        tid = pcmon("start", "--all", "--interval", 1000, sock=d.sock, check=0).stdout.strip()
        p = subprocess.run([exe, "-cp", CLASSES, "Phases", "6"], capture_output=True, text=True,
                           timeout=120)
        time.sleep(0.5)
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        pcmon("stop", tid, sock=d.sock, check=0)
        n = check_shares(listing, first_json_line(p.stdout), "--all")
        print(f"  --all: {n} samples of the three")
    finally:
        assert d.stop() == 0, d.logtext()


def test_inlined_chain_every_jdk():
    """JavaWork's chain of eight calls, which C2 inlines into one another, on each JDK under
    /usr/lib/jvm: every level on the stacks of leaf's samples (inline frames from the
    nmethod's debug info), leaf's line one of its own, and pcmond saying it decoded inlined
    methods."""
    java()
    src = open(os.path.join(os.path.dirname(__file__), "..", "workloads", "java",
                            "JavaWork.java")).read().splitlines()
    first = next(i for i, l in enumerate(src, 1) if "static long leaf()" in l)
    seen = set()
    for exe in sorted(glob.glob("/usr/lib/jvm/*/bin/java")):
        real = os.path.realpath(exe)
        if real in seen:
            continue
        seen.add(real)
        d = Daemon().start()
        try:
            listing, p = pcmon_json("run", "--interval", 1000, "--", exe, "-cp", CLASSES, "JavaWork",
                                    10**9, 3, sock=d.sock)
            names = procs(listing)
            leaf = names["java.JavaWork.leaf"]["deep"]
            # most of the timed loop's CPU time (a sample a ms); not of the whole JVM's, whose
            # compiler and collector threads take a share that grows as the machine is busier
            loop = first_json_line(p.stdout)["cpu_s"] * 1000
            assert leaf >= 0.8 * loop - 4 * loop ** 0.5, (exe, leaf, loop, listing["summary"]["counted"])
            for lv in range(1, 8):
                assert names[f"java.JavaWork.level{lv}"]["deep"] >= 0.98 * leaf, (exe, lv, names[f"java.JavaWork.level{lv}"])
            lines = pcmon_json("list", listing["target"]["id"], "--lines", "java.JavaWork.leaf",
                               sock=d.sock)[0]["lines"]
            rows = {l["line"]: l["count"] for l in lines["lines"]}
            assert max(rows, key=rows.get) in range(first, first + 5), (exe, rows)
            st = json.loads(pcmon("status", "--json", sock=d.sock, check=0).stdout)["java"]
            assert st["inlined"] > 0, (exe, st)
            print(f"  {exe}: {leaf} samples in leaf under its 7 levels; {st['inlined']} inlined methods")
        finally:
            assert d.stop() == 0, d.logtext()


def test_code_that_moves():
    """Churn: a call site that meets a new receiver class every 250 ms, its code deoptimized
    and compiled again all along: work and other within 3 pp of their own shares, the work's
    samples walked to main, and few frames refused as stale (flagged, never misnamed)."""
    exe = java()
    d = Daemon().start()
    try:
        listing, p = pcmon_json("run", "--interval", 1000, "--", exe, "-cp", CLASSES, "Churn", 5,
                                sock=d.sock)
        own = first_json_line(p.stdout)
        names = procs(listing)
        got = {m: names.get(f"java.Churn.{m}", {"deep": 0})["deep"] for m in ("work", "other")}
        n = sum(got.values())
        assert n >= 500, got
        for m in got:
            tol = share_tolerance_pp(own[m], n, 3.0)
            assert abs(got[m] / n - own[m]) * 100 <= tol, (m, got[m] / n, own[m], tol)
        check_named(listing, "Churn", "Churn", ("work", "other"))
        st = json.loads(pcmon("status", "--json", sock=d.sock, check=0).stdout)["java"]
        assert st["stale"] + st["unwalked"] <= 0.02 * st["frames"], st
        print(f"  Churn: {n} samples, work {got['work'] / n:.3f} (own {own['work']:.3f}); "
              f"{st['stale']} frames refused as stale of {st['frames']}")
    finally:
        assert d.stop() == 0, d.logtext()


def test_no_java_lists_native_frames():
    """--no-java: the JVM lists as a native program, no Java frame, no `java` cut."""
    exe = java()
    listing, _ = pcmon_json("run", "--no-java", "--interval", 1000, "--", exe, "-cp", CLASSES,
                            "Phases", 2)
    names = procs(listing)
    assert not [k for k in names if k.startswith("java.")], [k for k in names if k.startswith("java.")][:10]
    assert listing["summary"]["cut_short_by_reason"]["java"] == 0, listing["summary"]
    assert listing["target"].get("java") is False, listing["target"]


def test_unreadable_jvm_said_once():
    """A libjvm.so whose published tables lack what pcmon needs (tests/workloads/special/
    fakejvm.c, a "JDK 99" without the code cache's fields): said once, with what is missing,
    and its samples keep their native frames, not flagged."""
    exe = os.path.join(CLASSES, "..", "fakejvm", "fakejvm")
    if not os.path.exists(exe):
        raise Skip(f"no {exe} (make workloads)")
    p = pcmon("run", "-v", "--interval", 1000, "--json", "--", exe, 2, sock="/nonexistent/pcmond.sock",
              check=0)
    said = [l for l in p.stderr.splitlines() if "a HotSpot JVM pcmon cannot read" in l]
    assert len(said) == 1 and "JDK 99" in said[0] and "CodeCache::_heaps" in said[0], p.stderr[-2000:]
    listing = pcmon_json("run", "--interval", 1000, "--", exe, 2, sock="/nonexistent/pcmond.sock")[0]
    names = procs(listing)
    assert names["fakejvm.spin"]["deep"] >= 0.9 * listing["summary"]["counted"], names["fakejvm.spin"]
    assert listing["summary"]["cut_short_by_reason"]["java"] == 0, listing["summary"]


def test_status_counts_java_frames():
    """`pcmon status` says how many Java frames were walked, and how many refused."""
    exe = java()
    d = Daemon().start()
    try:
        pcmon("run", "--interval", 1000, "--", exe, "-cp", CLASSES, "Phases", 2, sock=d.sock, check=0)
        st = json.loads(pcmon("status", "--json", sock=d.sock, check=0).stdout)
        j = st["java"]
        assert j["jvms"] >= 1 and j["frames"] > 100 and j["compiled"] > 0, j
        assert j["stale"] <= j["frames"] * 0.05, j
        # a JVM's stacks are copied for the engine to read its frames, and counted neither
        # as walked by BPF's tables nor as copied for want of them: only the launcher's
        # samples before libjvm was found are
        n = pcmon_json("list", sock=d.sock)[0]["summary"]["counted"]
        assert st["cfi_walked"] + st["cfi_copied"] <= 0.1 * n, (st["cfi_walked"], st["cfi_copied"], n)
    finally:
        assert d.stop() == 0, d.logtext()


if __name__ == "__main__":
    run_tests(globals())
