#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""JavaScript frames of Node (V8) processes (docs/node.md) against
tests/workloads/node/jsphases.js, a Node program that times its own functions with
process.cpuUsage(): shares per JavaScript function with either unwinder, and attached by --pid
to a node started before pcmond; how much of the work is named; --no-python keeps the native
frames; a V8 pcmon does not read is said once and keeps its native frames. Skipped, saying
so, where there is no node."""
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import (Daemon, Skip, cgroup2_root, first_json_line, held, pcmon, pcmon_json, procs,
                 run_tests, share_tolerance_pp, status)

NODE = shutil.which("node") or "/usr/bin/node"
WORK = os.path.join(os.path.dirname(__file__), "..", "workloads", "node", "jsphases.js")
FNS = ("workA", "workB", "rec")
NOSOCK = "/nonexistent/pcmond.sock"  # (pcmon runs an engine of its own)


def need_node():
    if not os.path.exists(NODE):
        raise Skip(f"no node (apt-get install nodejs): {NODE}")
    v = subprocess.run([NODE, "-p", "process.versions.v8"], capture_output=True,
                       text=True).stdout.strip()
    major, minor = (int(x) for x in v.split(".")[:2])
    if (major, minor) not in ((11, 1), (11, 2), (11, 3)):
        raise Skip(f"node's V8 is {v}; pcmon reads 11.1.204 to 11.3 (node 20)")


def run(*opts, secs=4, node=None, args=()):
    need_node()
    listing, p = pcmon_json("run", "--interval", 1000, *opts, "--", node or NODE, WORK, secs,
                            *args, sock=NOSOCK)
    return listing, first_json_line(p.stdout), p


def where_else(listing, own):
    """What a failed share says besides: every function's share both ways, the listing's
    flags, and the procedures with most samples of their own (a share that fell short went
    somewhere)."""
    n = listing["summary"]["counted"]
    p = procs(listing)
    shares = ", ".join(f"{fn} {p.get(f'js.jsphases.{fn}', {'deep': 0})['deep'] / n:.3f}/"
                       f"{own['cpu'][fn]:.3f}" for fn in FNS)
    flags = {k: {a: b for a, b in v.items() if b} if isinstance(v, dict) else v
             for k, v in listing["summary"].items() if k != "critical" and v} | \
        {c["name"]: c["count"] for c in listing["summary"]["critical"]}
    top = sorted(listing["procedures"], key=lambda r: -r["shallow"])[:8]
    return f"shares {shares}; summary {flags}; most shallow " + \
        ", ".join(f"{r['procedure']} {r['shallow']}" for r in top)


def check_shares(listing, own, floor_pp=3.0):
    """Each function's deep share within 3 pp of the program's own clock (wider for few
    samples); at least 85 % of the samples named as the program's JavaScript."""
    n = listing["summary"]["counted"]
    assert n >= 500, f"only {n} samples"
    p = procs(listing)
    for fn in FNS:
        got = p.get(f"js.jsphases.{fn}", {"deep": 0})["deep"] / n
        want = own["cpu"][fn]
        tol = share_tolerance_pp(want, n, floor_pp)
        assert abs(got - want) * 100 <= tol, \
            f"{fn}: pcmon {got:.4f} vs program {want:.4f} (tolerance {tol:.2f} pp, {n} " \
            f"samples); {where_else(listing, own)}"
    work = sum(own["cpu"].values())
    named = sum(p.get(f"js.jsphases.{fn}", {"deep": 0})["deep"] for fn in FNS) / n
    assert named >= 0.85 * work, f"named {named:.3f} of the samples, the work is {work:.3f}"


def test_shares_default_unwinder():
    listing, own, _ = run()
    check_shares(listing, own)
    # the shared leaf, inlined by TurboFan into its callers, is named under each of them
    assert procs(listing)["js.jsphases.leaf"]["deep"] > 0.5 * listing["summary"]["counted"]


def test_shares_on_stack_replaced_loop():
    """The three functions called from the top-level loop itself: V8 replaces the loop's
    code while it runs (OSR) with code that inlines them, which no JSFunction holds (read
    from the feedback vector)."""
    listing, own, _ = run(args=("--flat",))
    check_shares(listing, own)


def test_exec_into_node():
    """A shell that runs a moment, then execs node: the new image is looked at anew, and its
    JavaScript frames are read."""
    need_node()
    listing, p = pcmon_json("run", "--interval", 1000, "--", "sh", "-c",
                            f"i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exec {NODE} {WORK} 3",
                            sock=NOSOCK)
    own = first_json_line(p.stdout)
    n = listing["summary"]["counted"]
    p = procs(listing)
    for fn in FNS:
        got = p.get(f"js.jsphases.{fn}", {"deep": 0})["deep"] / n
        # (the shell's own time is in n, not in the program's figures: looser)
        assert abs(got - own["cpu"][fn]) * 100 <= share_tolerance_pp(own["cpu"][fn], n, 6.0), \
            (fn, got, own)


def test_shares_fp():
    listing, own, _ = run("--unwind", "fp")
    check_shares(listing, own)


def body(src, fn):
    """The lines [first, last] of function @fn in jsphases.js."""
    first = next(i for i, l in enumerate(src) if l.startswith(f"function {fn}("))
    last = next(i for i in range(first, len(src)) if src[i] == "}")
    return first + 1, last + 1


def test_names_and_lines():
    """Functions named SCRIPT.FUNCTION; an arrow function with no name is (anonymous:LINE),
    at the line it is written on; --lines of a function TurboFan inlined into its callers
    lists lines of its own body, in its script."""
    need_node()
    src = open(WORK).read().splitlines()
    arrow = next(i + 1 for i, l in enumerate(src) if "items.map((x) => leaf(x))" in l)
    d = Daemon().start()
    try:
        listing, _ = pcmon_json("run", "--interval", 1000, "--", NODE, WORK, 2, sock=d.sock)
        p = procs(listing)
        assert f"js.jsphases.(anonymous:{arrow})" in p, [k for k in p if k.startswith("js.")]
        # each procedure carries its script and the line it starts on
        for fn in ("leaf", "workA"):
            e = p[f"js.jsphases.{fn}"]
            assert e.get("file", "").endswith("jsphases.js"), e
            assert e.get("line") == body(src, fn)[0], (e, body(src, fn))
        tid = listing["target"]["id"]
        for fn in ("leaf", "workA"):
            lines = pcmon_json("list", tid, "--lines", f"js.jsphases.{fn}", sock=d.sock)[0]
            rows = [(l["file"], l["line"], l["count"]) for l in lines["lines"]["lines"]]
            lo, hi = body(src, fn)
            inside = sum(c for f, ln, c in rows if f.endswith("jsphases.js") and lo <= ln <= hi)
            assert inside >= 0.9 * sum(c for _, _, c in rows), (fn, lo, hi, rows)
            # (lines from the code's positions, not the function's first line for all)
            assert max(rows, key=lambda r: r[2])[1] != lo, (fn, lo, rows)
    finally:
        assert d.stop() == 0, d.logtext()


NAP = os.path.join(os.path.dirname(__file__), "..", "workloads", "node", "jsnap.js")


def test_real_blocked_in_javascript():
    """REAL: a function blocked in Atomics.wait (a system call, whose wrapper in glibc keeps
    data in rbp: the frames are found from the unwinder's frame pointers) holds its share of
    the main thread's time, within 3 pp of the program's own clock. (Of the time its clock
    saw: a sample of REAL is a millisecond of the thread's wall time, and the thread's life
    goes on after the program's last reading, as node exits: 100 ms of 3 s here.)"""
    need_node()
    for unwind in ("auto",):
        listing, p = pcmon_json("run", "--real", "--unwind", unwind, "--interval", 1000,
                                "--by", "thread", "--", NODE, NAP, 3, sock=NOSOCK)
        own = first_json_line(p.stdout)
        main = next(g for g in listing["groups"] if g["tid"] == listing["target"]["pid"])
        n = own["wall_ms"]  # (--interval 1000: a sample a millisecond)
        got = next((e["deep"] for e in main["procedures"] if e["procedure"] == "js.jsnap.nap"),
                   0) / n
        tol = share_tolerance_pp(own["nap"], n, 3.0)
        assert abs(got - own["nap"]) * 100 <= tol, (unwind, got, own, n)
        print(f"  REAL, --unwind {unwind}: nap {got:.1%} of {n:.0f} ms, its own {own['nap']:.1%}")


LINES = os.path.join(os.path.dirname(__file__), "..", "workloads", "node", "jslines.js")


def lines_of_lined(*node_opts):
    """--lines of `lined` (two loops, each on a line of its own) in jslines.js run with
    @node_opts: each line's share of the function within 3 pp of the program's own, no line
    0 (not known) beyond that, and no address rows (a JavaScript frame's address is a key, not
    code's)."""
    need_node()
    d = Daemon().start()
    try:
        listing, p = pcmon_json("run", "--interval", 1000, "--", NODE, *node_opts, LINES, 3,
                                sock=d.sock)
        own = first_json_line(p.stdout)["lines"]
        tid = listing["target"]["id"]
        lines = pcmon_json("list", tid, "--lines", "js.jslines.lined", sock=d.sock)[0]["lines"]
        n = lines["count"]
        rows = {str(l["line"]): l["count"] for l in lines["lines"]
                if l["file"].endswith("jslines.js")}
        for line, want in own.items():
            got = rows.get(line, 0) / n
            assert abs(got - want) * 100 <= share_tolerance_pp(want, n, 3.0), (line, got, want, rows)
        unknown = sum(l["count"] for l in lines["lines"] if not l["line"]) / n
        assert unknown * 100 <= share_tolerance_pp(0.0, n, 3.0), (unknown, lines["lines"])
        assert not [a for l in lines["lines"] for a in l.get("addresses", [])], lines["lines"][:2]
        text = pcmon("list", tid, "--lines", "js.jslines.lined", sock=d.sock, check=0).stdout
        assert "no code" not in text, text
    finally:
        assert d.stop() == 0, d.logtext()


def test_lines_of_a_function():
    """--lines of a function as node runs it: interpreted, then baseline, then optimized."""
    lines_of_lined()


def test_lines_of_baseline_code():
    """--lines of a function in baseline (Sparkplug) code only, where a busy machine leaves
    it while the optimizing compiler's thread waits for a CPU: the bytecode at the pc (the
    code's bytecode offset table), and for a builtin that code called (most arithmetic) the
    call it returns to. The flags force that tier; pcmon needs none."""
    lines_of_lined("--always-sparkplug", "--no-turbofan")


def test_pid_attach():
    """A node started before pcmond, attached by --pid, then let go."""
    need_node()
    d = Daemon().start()
    try:
        with held([NODE, WORK, 4]) as (proc, pid, go):
            time.sleep(0.5)
            tid = pcmon("start", "--pid", pid, "--interval", 1000, sock=d.sock,
                        check=0).stdout.strip()
            time.sleep(0.3)
            go()
            out, _ = proc.communicate(timeout=120)
        own = first_json_line(out)
        time.sleep(0.5)
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        check_shares(listing, own)
        # V8's stacks are copied for the engine to read its frames, and counted neither as
        # walked by BPF's tables nor as copied for want of them: only samples taken before
        # pcmon knew the process for a V8 are
        st, n = status(d), listing["summary"]["counted"]
        assert st["cfi_walked"] + st["cfi_copied"] <= 0.05 * n, (st["cfi_walked"], st["cfi_copied"], n)
    finally:
        assert d.stop() == 0, d.logtext()


def test_perf_map_not_doubled():
    """node --perf-basic-prof: where pcmon reads V8's frames, the map's names do not list
    them a second time; with --no-python (the control) the map names the JIT code. Run in a
    directory of its own (node leaves an isolate-*-v8.log where it runs), its map removed."""
    need_node()
    tmp = tempfile.mkdtemp(prefix="pcmon-js-")
    old = os.getcwd()
    try:
        os.chdir(tmp)
        found = {}
        for opts in ((), ("--no-python",)):
            listing, p = pcmon_json("run", "--interval", 1000, *opts, "--", NODE,
                                    "--perf-basic-prof", os.path.join(old, WORK), 2,
                                    sock=NOSOCK)
            pid = listing["target"]["pid"]
            if os.path.exists(f"/tmp/perf-{pid}.map"):
                os.unlink(f"/tmp/perf-{pid}.map")
            n = listing["summary"]["counted"]
            jit = sum(e["deep"] for e in listing["procedures"]
                      if e["module"] == "[jit]" and "jsphases" in e["name"])
            js = procs(listing).get("js.jsphases.workA", {"deep": 0})["deep"]
            found[opts] = (jit / n, js / n)
        # (the map names only samples taken before pcmon looked at the process: flagged js)
        assert found[()][0] < 0.01 and found[()][1] > 0.2, found
        assert found[("--no-python",)][0] > 0.2 and found[("--no-python",)][1] == 0, found
    finally:
        os.chdir(old)
        shutil.rmtree(tmp, ignore_errors=True)


def watched(d, *how, into=None):
    """jsphases.js for 4 s, held until a target started with @how (after it was put in
    cgroup @into) runs: the listing, the program's own figures."""
    with held([NODE, WORK, 4]) as (proc, pid, go):
        if into:
            with open(os.path.join(into, "cgroup.procs"), "w") as f:
                f.write(str(pid))
        tid = pcmon("start", *how, "--interval", 1000, sock=d.sock, check=0).stdout.strip()
        time.sleep(0.3)
        go()
        out, _ = proc.communicate(timeout=120)
    time.sleep(0.5)
    listing = pcmon_json("list", tid, sock=d.sock)[0]
    pcmon("stop", tid, sock=d.sock, check=0)
    pcmon("drop", tid, sock=d.sock, check=0)
    return listing, first_json_line(out)


def check_shares_among(listing, own, what):
    """The functions' shares of the three's time, each within its tolerance of the
    program's: an --all target's samples are every process's."""
    p = procs(listing)
    got = {fn: p.get(f"js.jsphases.{fn}", {"deep": 0})["deep"] for fn in FNS}
    n, total = sum(got.values()), sum(own["cpu"][fn] for fn in FNS)
    assert n >= 500, (what, got)
    for fn in FNS:
        want = own["cpu"][fn] / total
        tol = share_tolerance_pp(want, n, 3.0)
        assert abs(got[fn] / n - want) * 100 <= tol, \
            f"{what}: {fn} pcmon {got[fn] / n:.4f} vs program {want:.4f} (tolerance {tol:.2f} pp)"


def test_cgroup_target():
    """A --cgroup target reads the JavaScript frames of a node in its cgroup."""
    need_node()
    cg = os.path.join(cgroup2_root(), f"pcmon-js-{os.getpid()}")
    os.mkdir(cg)
    d = Daemon().start()
    try:
        check_shares(*watched(d, "--cgroup", cg, into=cg))
    finally:
        assert d.stop() == 0, d.logtext()
        os.rmdir(cg)


def test_all_target():
    """An --all target reads the JavaScript frames of a node among everything else."""
    need_node()
    d = Daemon().start()
    try:
        check_shares_among(*watched(d, "--all"), "--all")
    finally:
        assert d.stop() == 0, d.logtext()


def walk(o):
    """Every (key, value) of a JSON document, depth first."""
    if isinstance(o, dict):
        for k, v in o.items():
            yield k, v
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)


def test_views_over_javascript():
    """WHEN, a critical section, the exports (folded, pprof with files), the flame graph and
    diff over JavaScript names, each against the program's own clocks: a second run with
    other odds moves rec's share, which diff finds."""
    need_node()
    tmp = tempfile.mkdtemp(prefix="pcmon-js-")
    d = Daemon().start()
    try:
        owns = []
        for odds in ("0.45,0.35,0.2", "0.35,0.25,0.4"):
            env = dict(os.environ, JSPHASES_WEIGHTS=odds)
            listing, p = pcmon_json("run", "--interval", 1000, "--", NODE, WORK, 4,
                                    sock=d.sock, env=env)
            owns.append(first_json_line(p.stdout))
        a, b = "1", "2"
        own = owns[0]
        # status counts the frames named, and the V8 processes read (gone by now: 0 or more)
        st = pcmon_json("status", sock=d.sock)[0]
        sampling = st.get("sampling", st)
        named = next((v for k, v in walk(sampling) if k == "js_frames_named"), None)
        assert named and named > 1000, ("status", named)
        # WHEN: every sample with rec active, no other
        s = pcmon_json("list", a, "--when", "js.jsphases.rec->*", sock=d.sock)[0]["summary"]
        got, want = s["counted"] / s["interrupts"], own["cpu"]["rec"]
        assert abs(got - want) * 100 <= share_tolerance_pp(want, s["interrupts"], 3.0), \
            ("when", got, want, s)
        # a critical section over rec: its samples charged to it, rec gone from the table
        listing = pcmon_json("list", a, "--critical", "recursion=*->js.jsphases.rec->*",
                             sock=d.sock)[0]
        s = listing["summary"]
        crit = {c["name"]: c["count"] for c in s.get("critical", [])}
        got = crit.get("recursion", 0) / s["interrupts"]
        assert abs(got - want) * 100 <= share_tolerance_pp(want, s["interrupts"], 3.0), \
            ("critical", got, want, crit)
        assert "js.jsphases.rec" not in procs(listing)
        # exports and the flame graph name the functions; pprof carries their script
        folded = pcmon("export", a, "--format", "folded", sock=d.sock, check=0).stdout
        assert any("jsphases.workA" in l and "jsphases.leaf" in l for l in folded.splitlines())
        pb = os.path.join(tmp, "a.pb")
        pcmon("export", a, "--format", "pprof", "-o", pb, sock=d.sock, check=0)
        raw = open(pb, "rb").read()
        raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        assert b"jsphases.workA" in raw and b"jsphases.js" in raw
        svg = os.path.join(tmp, "a.svg")
        pcmon("flamegraph", a, "-o", svg, sock=d.sock, check=0)
        assert "jsphases.workA" in open(svg).read()
        # diff: rec grew by what the program measured
        diff = pcmon_json("diff", a, b, sock=d.sock)[0]
        rec = next(p for p in diff["procedures"] if p["procedure"] == "jsphases.rec")
        moved = (owns[1]["cpu"]["rec"] - owns[0]["cpu"]["rec"]) * 100
        # within the diff's own interval (of both sides' sampling and their slices' spread),
        # widened by a point (a fixed 3 pp failed beside a build: +16.8 against +13.1)
        e = rec["deep_effect"]
        assert e["pp_low"] - 1 <= moved <= e["pp_high"] + 1, (e, moved)
        print(f"  diff: rec {rec['deep_pp']:+.1f} pp, the program {moved:+.1f} pp")
    finally:
        assert d.stop() == 0, d.logtext()
        shutil.rmtree(tmp, ignore_errors=True)


def test_no_python_keeps_native_frames():
    """--no-python (no runtime frames): node lists as the native program it is."""
    listing, _, _ = run("--no-python", secs=2)
    assert not [k for k in procs(listing) if k.startswith("js.")]


def unread_node(tmp, old, new, said_with, says):
    """A copy of node with symbol @old renamed @new (it still runs: node does not look its
    own symbols up) runs jsphases.js under a pcmond: pcmond says so once, naming @said_with
    and saying @says, and its samples keep their native frames."""
    copy = os.path.join(tmp, "node")
    data = open(NODE, "rb").read()
    assert len(old) == len(new) and data.count(old) >= 1, f"no symbol {old} to rename"
    open(copy, "wb").write(data.replace(old, new))
    os.chmod(copy, 0o755)
    d = Daemon().start()
    try:
        p = pcmon("run", "--json", "--interval", 1000, "--", copy, WORK, 2, sock=d.sock, check=0)
        own = first_json_line(p.stdout)
        assert own["cpu"]["workA"] > 0, own  # (JavaScript ran)
        listing = pcmon_json("list", "1", sock=d.sock)[0]
        js = [k for k in procs(listing) if k.startswith("js.")]
        assert not js, js
        said = [l for l in d.logtext().splitlines() if said_with in l]
        assert len(said) == 1, (said, d.logtext()[-3000:])
        assert says in said[0] and "keep their native frames" in said[0], said
    finally:
        assert d.stop() == 0, d.logtext()
        os.unlink(copy)


def test_unknown_v8_said_once():
    """A node whose V8 pcmon does not read is said once per process, its samples native: one
    that lacks a v8dbg_ constant pcmon needs, and one whose version is not 11.1.204 to 11.3
    (its minor number's symbol renamed: it reads as 11.0); the real node's frames are read
    (the control)."""
    need_node()
    tmp = tempfile.mkdtemp(prefix="pcmon-js-")
    try:
        unread_node(tmp, b"v8dbg_class_Map__instance_type__uint16_t\0",
                    b"v8dbg_class_Map__instance_tyqe__uint16_t\0",
                    "v8dbg_class_Map__instance_type", "without")
        unread_node(tmp, b"_ZN2v88internal7Version6minor_E\0",
                    b"_ZN2v88internal7Version6minox_E\0", "which pcmon does not read",
                    "V8 11.0.")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    listing, _, _ = run(secs=1)
    assert "js.jsphases.workA" in procs(listing)


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
