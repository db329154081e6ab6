#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""pcmon's benchmark harness (`make bench` and `make bench-full`, through bench/run.sh).

Measures, in one run on this machine, pcmon side by side with `perf record -g`, bpftrace and
libbpf-tools (key in results.json; * = make bench-full only, FULL_ONLY):

  1. slowdown      fixed work's CPU (and wall) time under each profiler / bare
  2. cost          the profiler process's CPU time and peak RSS per second and per 1000
                   samples (pcmond, perf record + perf report, bpftrace)
  3. accuracy      shares measured by the profiler vs the workload's own measurement
  4. scale         pcmond's cost vs target threads (1/16/256) and vs unique stacks;
     scale_peers   perf on the unique stacks; scale_bpftrace* bpftrace on them
  5. limits        the highest sampling rate with zero lost samples
  6. pingpong      REAL vs VIRTUAL on a context-switch-heavy workload, beside offcputime
  7. calls         the cost of counting calls, beside funclatency
  8. deep_stacks*  stacks deeper than 64 KiB: the default unwinder vs fp and perf dwarf
  9. churn*        pcmond --all on a compile loop, beside perf record -a -g
 10. fleet*        what serving (scrapes, pushes) costs the target
 11. python*       a CPython 3.11 program's slowdown and pcmond's CPU per 1000 samples,
                   with Python frames and --no-python, beside perf record -g
 12. java*         a Java program's slowdown and pcmond's CPU per 1000 samples with its
                   Java frames (default unwinder, --unwind fp) and --no-java, beside perf
                   record -g

Everything is a ratio or a cost measured in this run; nothing is a constant typed in here.
A form (BENCH_FORM: default, or full for make bench-full) runs every cell it has; a cell that
fails, hits the cell limit, or needs a peer tool that is missing says FAILED in the table; a
cell that cannot apply says n/a and why. The sections a form does not run keep their figures
from the last run that measured them ("measured" in results.json), and the table says when
that was. Prints the table on stdout, writes bench/results.json and refreshes the table in
bench/README.md, with no path of this machine in either (scrub); exit status 1 if the table
has a FAILED line, this run's or a kept section's.

Python 3 standard library only. Knobs (environment): BENCH_FORM (default | full),
BENCH_REPS (default 3), BENCH_WORK_S (bare CPU seconds of the fixed work, default 1.0),
BENCH_WINDOW_S (seconds each cost/threads session profiles, default 3), BENCH_STACKS_S
(seconds each unique-stacks session profiles, default 5), BENCH_CELL_S (each measured
run's time limit, default 30), BENCH_CHURN_S, BENCH_BASELINE (another checkout where `make`
was run: the sections whose cells are pcmon's own costs — cost's pcmond rows, ping-pong's
and call counting's pcmon rows — are also measured with its bin/pcmon and bin/pcmond,
interleaved with this tree's, and a comparison table follows the main one; with the full
form or BENCH_ONLY), BENCH_ONLY (sections to run, comma-separated keys of results.json,
whatever the form: the others keep their last figures).
"""
import bisect
import contextlib
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PCMON = os.path.join(ROOT, "bin", "pcmon")
PCMOND = os.path.join(ROOT, "bin", "pcmond")
WORK = os.path.join(ROOT, ".output", "workloads")  # the test workloads (make workloads)
BENCH = os.path.join(ROOT, ".output", "bench")  # ours, built by bench/run.sh
RESULTS = os.path.join(ROOT, "bench", "results.json")
README = os.path.join(ROOT, "bench", "README.md")

PERF = shutil.which("perf")
FUNCLATENCY = shutil.which("funclatency") or (os.path.exists("/usr/sbin/funclatency") and "/usr/sbin/funclatency")
OFFCPUTIME = shutil.which("offcputime") or (os.path.exists("/usr/sbin/offcputime") and "/usr/sbin/offcputime")
BPFTRACE = shutil.which("bpftrace")
NM = shutil.which("nm")

REPS = int(os.environ.get("BENCH_REPS", "3"))
PINGPONG_REPS = max(REPS, 5)  # cheap, and its ratios are noisier
WORK_S = float(os.environ.get("BENCH_WORK_S", "1.0"))
WINDOW_S = float(os.environ.get("BENCH_WINDOW_S", "3"))
STACKS_S = float(os.environ.get("BENCH_STACKS_S", "5"))
# the profilers' steady cost at 100 Hz and 1 kHz: CPU over this many seconds after the
# window (two of pcmond's 5 s saves), start-up and the first symbolization excluded
STEADY_S = float(os.environ.get("BENCH_STEADY_S", "10"))

# The three rates of the slowdown matrix: (Hz, pcmon --interval in microseconds)
RATES = [(100, 10000), (1000, 1000), (10000, 100)]
# The limits sweep, slowest first
SWEEP_US = [1000, 200, 100, 50, 20, 10]
SWEEP_MAX_WALL_S = 3  # a sweep run of fixedwork stops after this much wall time
THREAD_COUNTS = [1, 16, 256]
# Two forms. `make bench`, the default form, measures what a change to pcmon most often
# moves, side by side with the peers, in at most 10 minutes on a 2-CPU machine; `make
# bench-full` (BENCH_FORM=full) adds the sections below, which take about ten more. A form
# runs every cell it has: a cell that fails or hits the cell limit says FAILED in the table
# and the run exits 1. The sections a form does not run keep their figures from the last
# run that measured them, and the table says when that was.
FORM = os.environ.get("BENCH_FORM", "default")
FULL_ONLY = ("deep_stacks", "scale_bpftrace", "python", "java", "node", "alloc", "fleet", "churn")
# The churn section (9) runs pcmond --all and then perf record -a -g on a compile loop for
# BENCH_CHURN_S each (0: not run, its figures kept like a section of the other form)
CHURN_S = float(os.environ.get("BENCH_CHURN_S", "120"))
CHURN_HZ = 19
# each measured run's time limit: a safety net, a run that hits it is a failed cell
CELL_S = float(os.environ.get("BENCH_CELL_S", "30"))
DEFAULT_FORM_S = 600  # make bench takes at most this long here (the table says if it took more)
BPFTRACE_PRINT_S = 600  # bpftrace's exit print of ~100k unique stacks (about 40 s here)
CLK_TCK = os.sysconf("SC_CLK_TCK")
# BENCH_BASELINE: a checkout whose binaries are measured beside this tree's (None: not)
BASELINE = os.path.abspath(os.environ["BENCH_BASELINE"]) if os.environ.get("BENCH_BASELINE") else None
BASELINE_BINS = ("pcmon", "pcmond", "pcmon-engine.so")
# BENCH_ONLY=python,cost: run only these sections (and the calibration); the others keep
# their figures from the last bench/results.json, and the table says which are new
ONLY = [x for x in os.environ.get("BENCH_ONLY", "").split(",") if x]

TMP = tempfile.mkdtemp(prefix="pcmon-bench-")
NO_DAEMON = os.path.join(TMP, "no-daemon.sock")  # never exists: `pcmon run` uses its own engine
T_START = time.monotonic()
BASELINE_S = 0.0  # seconds of runs made only for the baseline comparison (see for_baseline)


def log(msg):
    """Progress goes to stderr so stdout is just the table."""
    print(f"[{time.monotonic() - T_START:6.1f}s] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- processes

class Ran:
    """A finished child: exit status, output, wall time, and its own rusage from wait4."""

    def __init__(self, rc, out, err, wall, cpu, maxrss_kb):
        self.rc, self.out, self.err, self.wall = rc, out, err, wall
        self.cpu, self.maxrss_kb = cpu, maxrss_kb
        self.limit = None  # the time limit it was killed at, if it was

    def why(self):
        """A one-line reason for a failure."""
        if self.limit:
            return f"hit the {self.limit:g} s cell limit"
        lines = [l for l in (self.err or "").splitlines()
                 if l.strip() and "RLIMIT_MEMLOCK" not in l]
        return (lines[-1] if lines else f"exit status {self.rc}")[:120]


class Child:
    """A child process whose stdout/stderr go to files (no pipe can fill up and block it)."""
    seq = 0

    def __init__(self, cmd, env=None):
        Child.seq += 1
        self.outpath = os.path.join(TMP, f"out.{Child.seq}")
        self.errpath = os.path.join(TMP, f"err.{Child.seq}")
        with open(self.outpath, "w") as o, open(self.errpath, "w") as e:
            self.p = subprocess.Popen([str(c) for c in cmd], stdout=o, stderr=e,
                                      stdin=subprocess.DEVNULL, env=env)
        self.pid = self.p.pid
        self.t0 = time.monotonic()
        self.done = None

    def output(self):
        with open(self.outpath, errors="replace") as f:
            return f.read()

    def wait_for(self, needle, timeout=30):
        """Wait until stdout (or stderr) contains needle; False if the child died or timed out."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with open(self.outpath, errors="replace") as o, open(self.errpath, errors="replace") as e:
                if needle in o.read() or needle in e.read():
                    return True
            if self.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def poll(self):
        if self.done is None:
            pid, status, ru = os.wait4(self.pid, os.WNOHANG)
            if pid:
                self._reaped(status, ru)
        return self.done

    def _reaped(self, status, ru):
        self.p.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from reaping again
        with open(self.errpath, errors="replace") as e:
            err = e.read()
        self.done = Ran(self.p.returncode, self.output(), err, time.monotonic() - self.t0,
                        ru.ru_utime + ru.ru_stime, ru.ru_maxrss)

    def wait(self, timeout=300, kill=True):
        """The finished child; past timeout it is killed (or, with kill=False, None)."""
        end = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > end:
                if kill:
                    self.kill()
                    self.done.limit = timeout
                break
            time.sleep(0.01)
        return self.done

    def signal(self, sig):
        if self.done is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self):
        if self.done is not None:
            return self.done
        self.signal(signal.SIGKILL)
        pid, status, ru = os.wait4(self.pid, 0)
        self._reaped(status, ru)
        return self.done


def run(cmd, timeout=None, env=None):
    """Run a measured cell: killed, and marked, past the cell limit."""
    return Child(cmd, env).wait(timeout or CELL_S)


def proc_cpu(pid):
    """utime+stime of a live process, in seconds (fields 14, 15 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def reset_hwm(pid):
    """Writing 5 to clear_refs resets VmHWM (peak RSS) to the current RSS."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def json_docs(text):
    """Every JSON object in text: a workload's one-line result and/or pcmon's document."""
    dec, pos, docs = json.JSONDecoder(), 0, []
    while True:
        start = text.find("{", pos)
        if start < 0:
            return docs
        try:
            doc, pos = dec.raw_decode(text, start)
            docs.append(doc)
        except json.JSONDecodeError:
            pos = start + 1


def doc_with(text, key):
    """The first JSON object in text that has key."""
    for d in json_docs(text):
        if isinstance(d, dict) and key in d:
            return d
    return None


def pcmon_env(sock):
    env = dict(os.environ)
    env["PCMON_SOCKET"] = sock
    return env


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def bpftrace_samples(text):
    """Sum of the counts bpftrace printed for its @ map: lines `]: N` or `@[...]: N`."""
    return sum(int(m) for m in re.findall(r"\]: (\d+)\s*$", text, re.M))


def perf_samples(err):
    """perf record's closing line: `[ perf record: Captured and wrote X MB f (N samples) ]`."""
    m = re.search(r"\((\d+) samples\)", err)
    return int(m.group(1)) if m else None


def perf_lost(path):
    """Lost-sample count from perf report's header (`# Total Lost Samples: N`)."""
    r = run([PERF, "report", "-i", path, "--stdio", "--no-children", "-g", "none",
             "--sort", "sym"], timeout=120)
    m = re.search(r"Total Lost Samples: (\d+)", r.out)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------- commands

def fixed_cmd(units):
    return [os.path.join(BENCH, "fixedwork"), str(units)]


def pcmon_run_cmd(mode, unwind, interval_us, cmd):
    return [PCMON, "run", f"--{mode}", "--unwind", unwind, "--interval", str(interval_us),
            "--json", "--", *cmd]


def perf_record_cmd(hz, data, cmd, unwind="fp"):
    # cpu-clock, like pcmon and bpftrace; for this software event the kernel turns -F into
    # a fixed period of 1e9/hz ns, the same as pcmon's --interval. -g walks frame pointers;
    # --call-graph dwarf copies 8 KiB of user stack per sample for perf report to unwind.
    cg = ["-g"] if unwind == "fp" else ["--call-graph", "dwarf"]
    return [PERF, "record", "-e", "cpu-clock", "-F", str(hz), *cg, "-o", data, "--", *cmd]


def bpftrace_prog(hz, pid):
    """The issue's bpftrace one-liner, plus a filter on the target's pid (`cpid` under -c).

    bpftrace's profile probe fires on every CPU whatever -p/-c say; unfiltered, it would
    aggregate (and at exit symbolize) every process's stacks, which made its exit take
    tens of seconds here and its cost depend on what else runs. With the filter it collects
    what pcmon and perf collect: the target's stacks.
    """
    return f"profile:hz:{hz} /pid == {pid}/ {{ @[ustack] = count(); }}"


def profiled(tool, mode, unwind, hz, us, cmd):
    """The command line that runs cmd under a profiler (tool None = bare), and its env."""
    if tool is None:
        return cmd, None
    if tool == "pcmon":
        return pcmon_run_cmd(mode, unwind, us, cmd), pcmon_env(NO_DAEMON)
    if tool == "perf":
        return perf_record_cmd(hz, os.path.join(TMP, "perf.data"), cmd, unwind), None
    if tool == "bpftrace":
        # bpftrace -c holds the command until its probes are attached; the profile probe
        # itself is system-wide whatever -c/-p say
        return [BPFTRACE, "-c", " ".join(cmd), "-e", bpftrace_prog(hz, "cpid")], None
    if tool == "timer":  # no profiler: fixedwork's own cpu-clock event (its TIMER_US)
        return cmd + [str(us)], None
    raise ValueError(tool)


def tool_missing(tool):
    if tool == "perf" and not PERF:
        return "perf not installed"
    if tool == "bpftrace" and not BPFTRACE:
        return "bpftrace not installed"
    return None


def samples_of(tool, r):
    """How many samples the profiler took of the target in a run."""
    if tool == "pcmon":
        d = doc_with(r.out, "summary")
        return d["summary"]["interrupts"] if d else None
    if tool == "perf":
        return perf_samples(r.err)
    if tool == "bpftrace":
        return bpftrace_samples(r.out)
    if tool == "timer":
        d = doc_with(r.out, "samples")
        return d["samples"] if d else None
    return None


# ---------------------------------------------------------------------------- baseline
#
# BENCH_BASELINE: a refactor has to show its costs stay within noise, old binaries vs new,
# on one machine in one run (figures from two runs differ by the load of the day). The
# sections whose cells are pcmon's own costs run each such cell with both trees' binaries,
# one right after the other, the order flipping every repetition, so drifting load hits both
# alike; peers are not measured twice.

@contextlib.contextmanager
def for_baseline():
    """Time spent in the block is counted as the comparison's (BASELINE_S): what
    BENCH_BASELINE adds to the run, said in results.json."""
    global BASELINE_S
    t0 = time.monotonic()
    try:
        yield
    finally:
        BASELINE_S += time.monotonic() - t0


@contextlib.contextmanager
def binaries(tree):
    """Run the block with tree's bin/pcmon and bin/pcmond (None: this tree's). Every
    command line is built from the globals PCMON and PCMOND when it runs, so a baseline cell
    goes through the very code that measures the current one; pcmon opens the
    pcmon-engine.so beside itself, so the engine is the tree's too. Counted in BASELINE_S."""
    global PCMON, PCMOND
    if tree is None:
        yield
        return
    saved = PCMON, PCMOND
    PCMON, PCMOND = os.path.join(tree, "bin", "pcmon"), os.path.join(tree, "bin", "pcmond")
    try:
        with for_baseline():
            yield
    finally:
        PCMON, PCMOND = saved


def trees_in_turn(rep):
    """The trees to measure a pcmon cell with in repetition rep, in the order to run them:
    this tree alone without the knob; with it, this tree and the baseline, first one then
    the other every other repetition (neither always runs on the heels of the same cell)."""
    if not BASELINE:
        return [None]
    return [None, BASELINE] if rep % 2 == 0 else [BASELINE, None]


def versus(figure, cells, base_runs, summarize):
    """A section's part of the comparison, for a section whose cells hold stats: for each
    pcmon cell, its headline figure for this tree (its cell in the main table) and for the
    baseline (the baseline's runs summarized the same way), and the baseline's runs."""
    out = {"figure": figure, "cells": {}}
    for key, rs in base_runs.items():
        cell = summarize(rs)
        out["cells"][key] = {"current": cells[key][figure], "baseline": cell[figure],
                             "errors": cell["errors"], "cell": cell, "runs": rs}
    return out


def baseline_missing():
    """Why BENCH_BASELINE cannot be measured (a binary `make` should have built), or None."""
    for name in BASELINE_BINS:
        path = os.path.join(BASELINE, "bin", name)
        if not os.path.isfile(path):
            return f"BENCH_BASELINE={BASELINE}: {path} is missing (run make there)"
    return None


def commit_of(tree):
    """`abbrev-hash subject` of a checkout's HEAD, to say what was compared (None if not git)."""
    try:
        r = run(["git", "-C", tree, "log", "-1", "--format=%h %s"], timeout=20)
    except OSError:
        return None
    line = r.out.strip()
    return (line if len(line) <= 64 else line[:63] + "…") if r.rc == 0 and line else None


# ---------------------------------------------------------------------------- 0. setup

def calibrate():
    """Units of fixedwork and round trips of pingpong for about WORK_S of bare run time."""
    log("calibrating the fixed-work workloads")
    per_unit = []
    for _ in range(2):
        d = doc_with(run(fixed_cmd(10000)).out, "units")
        per_unit.append(d["cpu_s"] / d["units"])
    units = max(1000, int(WORK_S / min(per_unit)))
    per_rt = []
    for _ in range(2):
        d = doc_with(run([os.path.join(BENCH, "pingpong"), "20000"]).out, "roundtrips")
        per_rt.append(d["wall_s"] / d["roundtrips"])
    rts = max(1000, int(WORK_S / min(per_rt)))
    return {"fixedwork_units": units, "fixedwork_unit_us": min(per_unit) * 1e6,
            "pingpong_roundtrips": rts, "pingpong_roundtrip_us": min(per_rt) * 1e6}


def dwarf_probe():
    """Does this pcmon unwind with DWARF? Ask it, rather than assume."""
    r = run(pcmon_run_cmd("virtual", "dwarf", 10000, fixed_cmd(100)), env=pcmon_env(NO_DAEMON))
    return None if r.rc == 0 else (r.why().replace("pcmon: ", "") or "refused")


# ---------------------------------------------------------------------------- 1. slowdown

def slowdown(cal, dwarf_err):
    units = cal["fixedwork_units"]
    configs = [("pcmon", "virtual", "fp"), ("pcmon", "real", "fp"), ("perf", None, "fp")]
    if dwarf_err is None:
        # pcmon unwinds with DWARF now: measure it, and perf's DWARF mode beside it
        configs += [("pcmon", "virtual", "dwarf"), ("pcmon", "real", "dwarf"), ("perf", None, "dwarf")]
    configs += [("bpftrace", None, None)]
    cells = [(c, hz, us) for c in configs for hz, us in RATES]
    runs = {"bare": []}
    for c, hz, us in cells:
        runs[cell_key(c, hz)] = []
    for rep in range(REPS):
        log(f"slowdown: repetition {rep + 1}/{REPS} ({len(cells) + 1} runs)")
        # bare first, then every profiled cell, in an order that rotates with the repetition
        order = cells[rep * 5 % len(cells):] + cells[:rep * 5 % len(cells)]
        for cell in [None] + order:
            if cell is None:
                key, tool, mode, unwind, hz, us = "bare", None, None, None, None, None
            else:
                (tool, mode, unwind), hz, us = cell
                key = cell_key(cell[0], hz)
                if tool_missing(tool):
                    runs[key].append({"error": tool_missing(tool)})
                    continue
            cmd, env = profiled(tool, mode, unwind, hz, us, fixed_cmd(units))
            r = run(cmd, env=env)
            d = doc_with(r.out, "units")
            if r.rc != 0 or d is None:
                runs[key].append({"error": r.why()})
                continue
            runs[key].append({"cpu_s": d["cpu_s"], "wall_s": d["wall_s"],
                              "samples": samples_of(tool, r), "tool_wall_s": r.wall,
                              "unwalkable_pct": unwalkable_pct(r) if tool == "pcmon" else None})
    # one more bare run at the end, so drift over the section shows in bare's spread
    r = run(fixed_cmd(units))
    d = doc_with(r.out, "units")
    runs["bare"].append({"cpu_s": d["cpu_s"], "wall_s": d["wall_s"]} if d else {"error": r.why()})

    bare = [x for x in runs["bare"] if "cpu_s" in x]
    if not bare:
        raise RuntimeError("fixedwork failed to run bare: " + runs["bare"][0].get("error", "?"))
    bare_cpu = statistics.median(x["cpu_s"] for x in bare)
    bare_wall = statistics.median(x["wall_s"] for x in bare)
    out = {"units": units, "bare_cpu_s": stats([x["cpu_s"] for x in bare]),
           "bare_wall_s": stats([x["wall_s"] for x in bare]),
           "dwarf": "ok" if dwarf_err is None else f"not implemented yet: {dwarf_err}",
           "cells": {}, "runs": runs}
    for key, rs in runs.items():
        if key == "bare":
            continue
        ok = [x for x in rs if "cpu_s" in x]
        errs = [x["error"] for x in rs if "error" in x]
        out["cells"][key] = {
            "cpu_ratio": stats([x["cpu_s"] / bare_cpu for x in ok]),
            "wall_ratio": stats([x["wall_s"] / bare_wall for x in ok]),
            "samples": stats([x["samples"] for x in ok]),
            "unwalkable_pct": stats([x.get("unwalkable_pct") for x in ok]),
            "errors": errs,
        }
    return out


def unwalkable_pct(r):
    """pcmon's share of samples whose user stack could not be walked (a sanity check)."""
    d = doc_with(r.out, "summary")
    if not d or not d["summary"].get("interrupts"):
        return None
    n = next((c["count"] for c in d["summary"].get("critical", []) if c["name"] == "unwalkable"), 0)
    return n * 100 / d["summary"]["interrupts"]


def cell_key(config, hz):
    tool, mode, unwind = config
    if tool == "pcmon":
        return f"pcmon {mode.upper()} {unwind} @{hz}Hz"
    if tool == "perf":
        return f"perf {'-g' if unwind == 'fp' else 'dwarf'} @{hz}Hz"
    return f"{tool} @{hz}Hz"


# ---------------------------------------------------------------------------- 6. REAL vs VIRTUAL

OFFCPU_KEY = "offcputime (all tasks)"


def bpf_attached(child, timeout=30):
    """Wait until a libbpf tool holds a BPF link (its programs are attached): its own
    "Tracing..." line sits in a stdio buffer until it exits. False if it died first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and child.poll() is None:
        try:
            if any(os.readlink(f"/proc/{child.pid}/fd/{fd}") in ("anon_inode:bpf_link",
                                                                  "anon_inode:[perf_event]")
                   for fd in os.listdir(f"/proc/{child.pid}/fd")):
                time.sleep(0.2)  # the rest of its links
                return child.poll() is None
        except OSError:
            pass
        time.sleep(0.02)
    return False


def offcputime_run(cmd):
    """libbpf-tools' offcputime, the REAL peer: system-wide (its -p filters in BPF after the
    same sched_switch hook), user and kernel stacks of every switch, started before the
    workload and stopped after it."""
    if not OFFCPUTIME:
        return {"error": "offcputime not installed (Debian package libbpf-tools)"}
    oc = Child([OFFCPUTIME])
    try:
        if not bpf_attached(oc):
            return {"error": f"offcputime did not attach: {(oc.done or oc.kill()).why()}"}
        r = run(cmd)
    finally:
        oc.signal(signal.SIGINT)
        oc.wait(CELL_S)
    d = doc_with(r.out, "roundtrips")
    if r.rc != 0 or d is None:
        return {"error": r.why()}
    return {"wall_s": d["wall_s"], "cpu_s": d["cpu_s"], "samples": None, "lost": None}


def pingpong_run(key, cmd):
    """One ping-pong run, bare or under the pcmon cell key (at 1 kHz): its wall and CPU
    time, and pcmon's samples and lost records."""
    if key == "bare":
        c, env = cmd, None
    else:
        c, env = profiled("pcmon", "real" if "REAL" in key else "virtual",
                          "dwarf" if "dwarf" in key else "fp", 1000, 1000, cmd)
    r = run(c, env=env)
    d = doc_with(r.out, "roundtrips")
    if r.rc != 0 or d is None:
        return {"error": r.why()}
    summ = doc_with(r.out, "summary") if key != "bare" else None
    return {"wall_s": d["wall_s"], "cpu_s": d["cpu_s"],
            "samples": samples_of("pcmon", r) if key != "bare" else None,
            "lost": summ["summary"]["lost"] if summ else None}


def pingpong_cell(rs, bw, bc, rts):
    """A profiled cell's runs against bare's median wall (bw) and CPU (bc) time."""
    ok = [x for x in rs if "wall_s" in x]
    return {"wall_ratio": stats([x["wall_s"] / bw for x in ok]),
            # two context switches per round trip, both on one CPU
            "us_per_switch": stats([(x["wall_s"] - bw) / (2 * rts) * 1e6 for x in ok]),
            "cpu_ratio": stats([x["cpu_s"] / bc for x in ok]),
            "samples": stats([x["samples"] for x in ok if x["samples"] is not None]),
            "errors": [x["error"] for x in rs if "error" in x]}


PINGPONG_FIGURE = "wall_ratio"  # ping-pong's headline: the main table's first column


def pingpong(cal):
    rts = cal["pingpong_roundtrips"]
    cmd = [os.path.join(BENCH, "pingpong"), str(rts)]
    keys = ["bare", "pcmon VIRTUAL fp @1000Hz", "pcmon REAL fp @1000Hz",
            "pcmon REAL dwarf @1000Hz", OFFCPU_KEY]
    runs = {k: [] for k in keys}
    base_runs = {k: [] for k in keys if k.startswith("pcmon")}  # BENCH_BASELINE's
    for rep in range(PINGPONG_REPS):
        log(f"ping-pong: repetition {rep + 1}/{PINGPONG_REPS}")
        for i in range(len(keys)):
            key = keys[(i + rep) % len(keys)]
            if key == OFFCPU_KEY:
                runs[key].append(offcputime_run(cmd))
                continue
            for tree in (trees_in_turn(rep) if key in base_runs else [None]):
                with binaries(tree):
                    (base_runs if tree else runs)[key].append(pingpong_run(key, cmd))
    bare_ok = [x for x in runs["bare"] if "wall_s" in x]
    out = {"roundtrips": rts, "runs": runs, "cells": {}}
    if not bare_ok:
        out["error"] = "bare ping-pong failed"
        return out
    bw = statistics.median(x["wall_s"] for x in bare_ok)
    bc = statistics.median(x["cpu_s"] for x in bare_ok)
    out["bare_wall_s"], out["bare_cpu_s"] = stats([x["wall_s"] for x in bare_ok]), bc
    out["roundtrip_us"] = bw / rts * 1e6
    for key in keys[1:]:
        out["cells"][key] = pingpong_cell(runs[key], bw, bc, rts)
    if BASELINE:
        # the baseline's cells against the same bare runs
        out["baseline"] = versus(PINGPONG_FIGURE, out["cells"], base_runs,
                                 lambda rs: pingpong_cell(rs, bw, bc, rts))
    return out


# ---------------------------------------------------------------------------- calls

CALLS_N = 50000
CALLS_FIGURE = "ns_per_call"  # call counting's headline: wall time added per call
# a node on hot() that starts 20 legs (to itself, and to 19 procedures never called)
MANY_LEGS = (["--node", "callheavy.hot"] + [a for i in range(19) for a in ("--node", f"callheavy.cold_{i}")]
             + ["--leg", "1:1"] + [a for i in range(19) for a in ("--leg", f"1:{i + 2}")])


def count_run(cmd, when=None, method=None):
    """callheavy under `pcmon count` of hot(): its wall time, if every call was counted (with
    --when @when: every call matched, classed by @method)."""
    extra = ["--when", when] if when else []
    r = run([PCMON, "count", "--json", "callheavy.hot", *extra, "--"] + cmd, env=pcmon_env(NO_DAEMON))
    d, c = doc_with(r.out, "calls"), doc_with(r.out, "target")
    ok = d and c and c["calls"]["procedures"][0]["calls"] == CALLS_N and \
        (not when or c["calls"]["when"]["method"] == method)
    return ({"wall_s": d["wall_s"], "counted": c["calls"]["procedures"][0]["calls"],
             "probe_cost_ns": c["calls"]["probe_cost_ns"]} if ok else {"error": r.why()})


# WHEN at probes (docs/when.md): hot() is called from main, so both patterns match every call;
# the first is answered from the shadow stack (main probed too), the second (a direct call)
# by a stack walk at each entry
def count_when_shadow(cmd):
    return count_run(cmd, "callheavy.main->*", "shadow stack")


def count_when_walk(cmd):
    return count_run(cmd, "callheavy.main->callheavy.hot", "stack walk")


def node_run(cmd):
    """callheavy with a probe node on hot()'s entry only (one hit per call)."""
    r = run([PCMON, "run", "--json", "--no-sample", "--node", "callheavy.hot", "--"] + cmd,
            env=pcmon_env(NO_DAEMON))
    d, t = doc_with(r.out, "calls"), doc_with(r.out, "tables")
    ok = d and t and t["tables"]["nodes"][0]["hits"] == CALLS_N
    return {"wall_s": d["wall_s"], "per_hit_ns": t["tables"]["overhead"]["per_hit_ns"]} if ok else {"error": r.why()}


def legs_run(cmd):
    """callheavy with the node on hot() that starts 20 legs (MANY_LEGS)."""
    r = run([PCMON, "run", "--json", "--no-sample", *MANY_LEGS, "--"] + cmd, env=pcmon_env(NO_DAEMON))
    d, t = doc_with(r.out, "calls"), doc_with(r.out, "tables")
    ok = d and t and t["tables"]["nodes"][0]["hits"] == CALLS_N and \
        t["tables"]["legs"][0]["count"] == CALLS_N - 1
    return {"wall_s": d["wall_s"]} if ok else {"error": r.why()}


# tail profiles (docs/tail.md): each call of hot() an instance of leg hot -> hot%return, with
# sampling on, the leg untailed and tailed (its instances' sets and ends told to the engine,
# each sample tied to them)
TAIL_LEG = ["--node", "callheavy.hot", "--node", "callheavy.hot%return", "--leg", "1:2"]


def tail_run(cmd, tailed):
    r = run([PCMON, "run", "--json", "--interval", "1000", *TAIL_LEG,
             *(["--tail", "1"] if tailed else []), "--"] + cmd, env=pcmon_env(NO_DAEMON))
    d, t = doc_with(r.out, "calls"), doc_with(r.out, "tables")
    ok = d and t and t["tables"]["legs"][0]["count"] == CALLS_N
    if ok and tailed:
        tails = t.get("tails") or [{}]
        ok = tails[0].get("instances") == CALLS_N and not tails[0].get("unmatched_samples")
    return {"wall_s": d["wall_s"]} if ok else {"error": r.why() if not (d and t) else
                                               "not every call was an instance of the leg"}


def leg_untailed(cmd):
    return tail_run(cmd, False)


def leg_tailed(cmd):
    return tail_run(cmd, True)


def calls_cell(rs, bare):
    """A cell's runs against bare's median wall time: ratio, and ns added per call."""
    ok = [x for x in rs if "wall_s" in x]
    return {"wall_ratio": stats([x["wall_s"] / bare for x in ok]),
            "ns_per_call": stats([(x["wall_s"] - bare) / CALLS_N * 1e9 for x in ok]),
            "errors": [x["error"] for x in rs if "error" in x]}


def call_counting():
    """The cost of counting a procedure's calls: a program that calls hot() CALLS_N times,
    bare, under `pcmon count` (entry + return probes, shadow stack), with a pcmon probe
    node on its entry (one hit per call), and under libbpf-tools' funclatency (entry +
    return probes, a latency histogram): extra wall time per call."""
    cmd = [os.path.join(BENCH, "callheavy"), str(CALLS_N)]
    pcmon_cells = {"pcmon count": count_run, "count --when, shadow": count_when_shadow,
                   "count --when, walk": count_when_walk,
                   "pcmon node": node_run, "pcmon node, 20 legs": legs_run,
                   "leg, sampled": leg_untailed, "leg, sampled, tailed": leg_tailed}
    runs = {"bare": [], **{k: [] for k in pcmon_cells}, "funclatency": []}
    base_runs = {k: [] for k in pcmon_cells}  # BENCH_BASELINE's
    for rep in range(REPS):
        log(f"call counting: repetition {rep + 1}/{REPS}")
        r = run(cmd)
        d = doc_with(r.out, "calls")
        runs["bare"].append(d["wall_s"] if d else {"error": r.why()})
        for key, measure in pcmon_cells.items():
            for tree in trees_in_turn(rep):
                with binaries(tree):
                    (base_runs if tree else runs)[key].append(measure(cmd))
        if not FUNCLATENCY:
            runs["funclatency"].append({"error": "funclatency not found (Debian package libbpf-tools)"})
            continue
        fl = Child([FUNCLATENCY, "-u", f"{cmd[0]}:hot"])
        try:
            if not bpf_attached(fl):
                runs["funclatency"].append({"error": f"funclatency did not attach: {(fl.done or fl.kill()).why()}"})
                continue
            r = run(cmd)
        finally:
            fl.signal(signal.SIGINT)
            fr = fl.wait()
        d = doc_with(r.out, "calls")
        runs["funclatency"].append({"wall_s": d["wall_s"]} if d else {"error": r.why()})
    bare = statistics.median(x for x in runs["bare"] if not isinstance(x, dict))
    out = {"calls": CALLS_N, "bare_wall_s": bare, "bare_ns_per_call": bare / CALLS_N * 1e9,
           "runs": runs, "cells": {}}
    for key in (*pcmon_cells, "funclatency"):
        out["cells"][key] = calls_cell(runs[key], bare)
    pc = [x["probe_cost_ns"] for x in runs["pcmon count"] if "probe_cost_ns" in x]
    out["pcmon_calibrated_ns"] = stats(pc)
    if BASELINE:
        # the baseline's cells against the same bare runs
        out["baseline"] = versus(CALLS_FIGURE, out["cells"], base_runs, lambda rs: calls_cell(rs, bare))
    return out


# call times against the program's own clock (docs/count.md, "Times and their error"): the
# test workload cnt's work(), which spins NS ns of wall time a call and sums what it spun
CNT = os.path.join(ROOT, ".output", "workloads", "cnt")  # built by `make workloads`
CALL_TIMES = ((100, 20000), (1000, 5000), (10000, 1000), (100000, 200))


def funclatency_hist(text):
    """funclatency's histogram (ns): [(lo, hi, count)]."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"\s*(\d+) -> (\d+)\s*: (\d+)", line)
        if m:
            rows.append(tuple(int(x) for x in m.groups()))
    return rows


def call_times():
    """For work() of 100 ns, 1 us, 10 us and 100 us called by a loop: the program's own
    time a call, pcmon count's (probes' cost taken out) with its stated error, and
    funclatency's (libbpf-tools: a log2 histogram, whose mean is known to its buckets:
    each count taken at its bucket's middle)."""
    if not os.path.exists(CNT):
        return {"error": f"{CNT} not built (make workloads)"}
    out = {}
    for ns, calls in CALL_TIMES:
        cell = {"calls": calls, "runs": []}
        for rep in range(REPS):
            log(f"call times: {ns} ns x {calls}, repetition {rep + 1}/{REPS}")
            r = run([PCMON, "count", "--json", "cnt.work", "--", CNT, "flat", str(ns), str(calls)],
                    env=pcmon_env(NO_DAEMON))
            own, c = doc_with(r.out, "work_ns"), doc_with(r.out, "target")
            if not own or not c:
                cell["runs"].append({"error": r.why()})
                continue
            w = c["calls"]["procedures"][0]
            run_ = {"program_ns": own["work_ns"] / calls, "pcmon_ns": w["total_ns"] / calls,
                    "pcmon_err_ns": w["total_err_ns"] / calls,
                    "below_resolution": "total_ns" in w["below_resolution"],
                    "within_error": abs(w["total_ns"] - own["work_ns"]) <= w["total_err_ns"],
                    "preempted_at_probes_ns": w["preempted_at_probes_ns"] / calls}
            if FUNCLATENCY:
                fl = Child([FUNCLATENCY, f"{CNT}:work"])
                try:
                    if bpf_attached(fl):
                        r = run([CNT, "flat", str(ns), str(calls)])
                        o = doc_with(r.out, "work_ns")
                        run_["program_ns_funclatency_run"] = o and o["work_ns"] / calls
                finally:
                    fl.signal(signal.SIGINT)
                    fl.wait()
                h = funclatency_hist(fl.output())
                n = sum(x[2] for x in h)
                run_["funclatency_ns"] = (sum((lo + hi) / 2 * k for lo, hi, k in h) / n) if n else None
                run_["funclatency_calls"] = n
            cell["runs"].append(run_)
        ok = [x for x in cell["runs"] if "error" not in x]
        for k in ("program_ns", "pcmon_ns", "pcmon_err_ns", "funclatency_ns"):
            vals = [x[k] for x in ok if x.get(k) is not None]
            cell[k] = stats(vals) if vals else None
        cell["within_error"] = f"{sum(x['within_error'] for x in ok)}/{len(ok)}"
        out[str(ns)] = cell
    return out


# ---------------------------------------------------------------------------- 3. accuracy

def nm_symbols(path):
    """([(start, end, name)] sorted, {name: start}) for the functions of an ELF file."""
    r = run([NM, "--defined-only", "-S", path], timeout=60)
    rows, by_name = [], {}
    for line in r.out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW":
            start = int(f[0], 16)
            rows.append((start, start + int(f[1], 16), f[3]))
            by_name[f[3]] = start
    rows.sort()
    return rows, by_name


def resolve(syms, addr):
    """The function of syms covering the file address addr, or the address in hex."""
    i = bisect.bisect_right(syms[0], (addr, float("inf"), "")) - 1
    if i >= 0 and syms[0][i][0] <= addr < syms[0][i][1]:
        return syms[0][i][2]
    return hex(addr)


def accuracy():
    out = []
    secs = "4"
    threefn = [os.path.join(WORK, "threefn"), secs]
    spinsleep = [os.path.join(WORK, "spinsleep"), secs]

    def pcmon_case(name, mode, cmd, prefix, pairs, field):
        log(f"accuracy: pcmon {mode.upper()} on {name}")
        r = run(pcmon_run_cmd(mode, "fp", 1000, cmd), env=pcmon_env(NO_DAEMON))
        own, doc = json_docs(r.out)[:1], doc_with(r.out, "summary")
        if r.rc != 0 or not own or doc is None:
            return {"tool": "pcmon", "mode": mode.upper(), "workload": name, "error": r.why()}
        procs = {p["procedure"]: p for p in doc["procedures"]}
        shares = []
        for proc, ownkey in pairs:
            got = procs.get(f"{prefix}.{proc}", {}).get(field, 0.0)
            shares.append({"procedure": proc, "own_pct": own[0][ownkey] * 100, "measured_pct": got,
                           "abs_err_pp": abs(got - own[0][ownkey] * 100)})
        return {"tool": "pcmon", "mode": mode.upper(), "workload": name,
                "share": f"{field.split('_')[0]} %", "samples": doc["summary"]["counted"],
                "lost": doc["summary"]["lost"], "shares": shares,
                "max_err_pp": max(s["abs_err_pp"] for s in shares)}

    three = [("work_a", "work_a"), ("work_b", "work_b"), ("work_c", "work_c")]
    out.append(pcmon_case("threefn", "virtual", threefn, "threefn", three, "shallow_pct"))
    out.append(pcmon_case("spinsleep", "real", spinsleep, "spinsleep",
                          [("spin_part", "spin"), ("sleep_part", "sleep")], "deep_pct"))

    # perf: on-CPU sampling only (cpu-clock), so VIRTUAL on threefn
    if not PERF:
        out.append({"tool": "perf", "mode": "VIRTUAL", "workload": "threefn", "error": "perf not installed"})
    else:
        log("accuracy: perf record on threefn")
        data = os.path.join(TMP, "acc.perf.data")
        r = run(perf_record_cmd(1000, data, threefn))
        own = doc_with(r.out, "work_a")
        rep = run([PERF, "report", "-i", data, "--stdio", "--no-children", "-g", "none",
                   "-F", "overhead,sym"], timeout=120) if r.rc == 0 else r
        if r.rc != 0 or rep.rc != 0 or own is None:
            out.append({"tool": "perf", "mode": "VIRTUAL", "workload": "threefn", "error": rep.why()})
        else:
            pct = {}
            for m in re.finditer(r"^\s*([\d.]+)%\s+\[\.\]\s+(\S+)", rep.out, re.M):
                pct[m.group(2)] = pct.get(m.group(2), 0.0) + float(m.group(1))
            shares = [{"procedure": p, "own_pct": own[k] * 100, "measured_pct": pct.get(p, 0.0),
                       "abs_err_pp": abs(pct.get(p, 0.0) - own[k] * 100)} for p, k in three]
            out.append({"tool": "perf", "mode": "VIRTUAL", "workload": "threefn", "share": "self %",
                        "samples": perf_samples(r.err), "shares": shares,
                        "max_err_pp": max(s["abs_err_pp"] for s in shares)})

    # bpftrace: the innermost frame of each sample, for threefn's pid only (cpid). Under -c
    # the workload has exited when bpftrace prints, so bpftrace cannot name the addresses;
    # a uprobe on main records main's run-time address, and nm's table resolves the rest.
    if not BPFTRACE or not NM:
        out.append({"tool": "bpftrace", "mode": "VIRTUAL", "workload": "threefn",
                    "error": "bpftrace not installed" if not BPFTRACE else "nm (binutils) not installed"})
    else:
        log("accuracy: bpftrace on threefn")
        prog = (f"uprobe:{threefn[0]}:main /pid == cpid/ {{ @base = reg(\"ip\"); }} "
                "profile:hz:1000 /pid == cpid/ { @[ustack(1)] = count(); }")
        r = run([BPFTRACE, "-c", " ".join(threefn), "-e", prog])
        own = doc_with(r.out, "work_a")
        syms = nm_symbols(threefn[0])
        base = re.search(r"^@base: (\d+)", r.out, re.M)
        counts, total = {}, 0
        for m in re.finditer(r"@\[\s*\n\s*(\S+)\s*\n\s*\]: (\d+)", r.out):
            frame, n = m.group(1), int(m.group(2))
            total += n
            if frame.startswith("0x") and base and "main" in syms[1]:
                name = resolve(syms, int(frame, 16) - int(base.group(1)) + syms[1]["main"])
            else:
                name = frame.split("+")[0]
            counts[name] = counts.get(name, 0) + n
        if r.rc != 0 or own is None or not total:
            out.append({"tool": "bpftrace", "mode": "VIRTUAL", "workload": "threefn", "error": r.why()})
        else:
            shares = [{"procedure": p, "own_pct": own[k] * 100,
                       "measured_pct": counts.get(p, 0) * 100 / total,
                       "abs_err_pp": abs(counts.get(p, 0) * 100 / total - own[k] * 100)}
                      for p, k in three]
            out.append({"tool": "bpftrace", "mode": "VIRTUAL", "workload": "threefn",
                        "share": "leaf %", "samples": total, "shares": shares,
                        "max_err_pp": max(s["abs_err_pp"] for s in shares)})
    return out


# ---------------------------------------------------------------------------- sessions
#
# A session attaches one profiler to a running workload for a while and reports what the
# profiler's own process spent: CPU (utime+stime), peak RSS, samples, and the time and cost
# of turning the samples into a listing (pcmon list / perf report / bpftrace's exit print).
# "expected" is the target's CPU time during the session times the rate: the samples a
# profiler should take, so delivered = samples / expected shows silent losses too.

class Daemon:
    """A private pcmond (own socket and state directory), fresh for each session, so its
    peak RSS and symbol caches belong to that session alone."""
    seq = 0

    def __init__(self, *more):
        Daemon.seq += 1
        d = os.path.join(TMP, f"pcmond.{Daemon.seq}")
        os.makedirs(d)
        self.sock = os.path.join(d, "sock")
        # --bpf-stats: the BPF columns (charged to the target's threads, not to pcmond)
        self.child = Child([PCMOND, "--foreground", "--socket", self.sock, "--bpf-stats",
                            "--state-dir", os.path.join(d, "state"), *map(str, more)])
        self.pid = self.child.pid
        end = time.monotonic() + 15
        while time.monotonic() < end:
            if self.child.poll() is not None:
                raise RuntimeError(f"pcmond exited: {self.child.done.why()}")
            if os.path.exists(self.sock) and self.cli("status").rc == 0:
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("pcmond did not answer on its socket within 15 s")

    def cli(self, *args, timeout=None):
        return run([PCMON, *args], env=pcmon_env(self.sock), timeout=timeout)

    def json(self, *args):
        r = self.cli(args[0], "--json", *args[1:])
        if r.rc != 0:
            raise RuntimeError(f"pcmon {' '.join(map(str, args))}: {r.why()}")
        return json.loads(r.out)

    def cpu(self):
        return proc_cpu(self.pid)

    def stop(self):
        self.child.signal(signal.SIGTERM)
        if self.child.wait(10) is None or self.child.done is None:
            self.child.kill()


def prog_stats(status, name):
    for p in status.get("programs", []):
        if p["name"] == name:
            return p["runs"], p["run_time_ns"]
    return 0, 0


def bpf_delta(s0, s1, names):
    """BPF program runs and run time between two `pcmon status` documents."""
    runs = sum(prog_stats(s1, n)[0] - prog_stats(s0, n)[0] for n in names)
    ns = sum(prog_stats(s1, n)[1] - prog_stats(s0, n)[1] for n in names)
    return runs, ns


def bpf_prog_stats(pid):
    """Run count and run time (ns) of the BPF programs a process holds open, from the
    fdinfo of its bpf-prog file descriptors (kept while BPF statistics are enabled)."""
    runs = ns = 0
    seen = set()
    fddir = f"/proc/{pid}/fd"
    for fd in os.listdir(fddir):
        try:
            if os.readlink(f"{fddir}/{fd}") != "anon_inode:bpf-prog":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            continue
        prog_id = info.get("prog_id", fd).strip()
        if prog_id in seen:
            continue
        seen.add(prog_id)
        runs += int(info.get("run_cnt", "0"))
        ns += int(info.get("run_time_ns", "0"))
    return runs, ns


class BpfStats:
    """Turn on the kernel's BPF run-time statistics while held (BPF_ENABLE_STATS returns an
    fd; closing it turns them off again). pcmond does this itself; for bpftrace's sessions we
    do it, so both are measured the same way. None if this architecture's syscall number is
    unknown here."""
    SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
    BPF_ENABLE_STATS, BPF_STATS_RUN_TIME = 32, 0

    def __enter__(self):
        self.fd = -1
        if self.SYS_BPF:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            attr = ctypes.create_string_buffer(self.BPF_STATS_RUN_TIME.to_bytes(4, sys.byteorder), 8)
            self.fd = libc.syscall(self.SYS_BPF, self.BPF_ENABLE_STATS, attr, 8)
        return self

    def __exit__(self, *exc):
        if self.fd >= 0:
            os.close(self.fd)


def start_workload(cmd):
    w = Child(cmd)
    if not w.wait_for("ready", 30):
        w.kill()
        raise RuntimeError(f"{os.path.basename(cmd[0])} did not start: {w.done.why()}")
    return w


def wait_attached(pid, target, timeout=60):
    """Wait until a profiler holds its perf events open (its count of perf_event fds has
    stopped growing). Returns (target CPU seconds, time) as of when the first fd appeared:
    where the profiler's sampling starts. None if it died or never attached."""
    end, last, since, first = time.monotonic() + timeout, -1, time.monotonic(), None
    while time.monotonic() < end:
        cpu, now = proc_cpu(target), time.monotonic()
        try:
            n = sum(1 for fd in os.listdir(f"/proc/{pid}/fd")
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]")
        except OSError:
            if not os.path.exists(f"/proc/{pid}"):
                return None
            n = -1
        if n > 0 and first is None:
            first = (cpu, now)
        if n != last:
            last, since = n, now
        elif n > 0 and now - since > 0.2:
            return first
        time.sleep(0.01)
    return None


def per(x, secs, smp):
    """CPU ms per second of profiling and per 1000 samples."""
    return {"cpu_ms_per_s": x * 1e3 / secs if secs else None,
            "cpu_ms_per_1k_samples": x * 1e6 / smp if smp else None}


def socket_rtt(sock, req):
    """Wall ms of one request on a connection opened beforehand: the daemon's answer time
    (and this client's own wake-up, which it runs at the daemon's priority to keep small)."""
    import socket
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(CELL_S)
    c.connect(sock)
    old = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
        t0 = time.monotonic()
        c.sendall((json.dumps({"v": 1, **req}) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = c.recv(1 << 20)
            if not chunk:
                break
            data += chunk
        ms = (time.monotonic() - t0) * 1e3
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, old)
        c.close()
    ok = json.loads(data or b"{}").get("ok")
    return ms if ok else None


def latencies(dmn, tid, reps=5):
    """How long commands take while the target's threads keep both CPUs busy: the daemon's
    answer on its socket, the whole `pcmon` command (a new process on a loaded machine), and
    /bin/true for the cost of starting any process here. Each command reps times, in turn
    with the others (the wait for a CPU varies by hundreds of ms from one to the next): the
    median and the longest."""
    out = {"socket_ms": {}, "cli_ms": {}, "cli_ms_max": {}}
    for cmd in ("list", "pause", "resume"):
        out["socket_ms"][cmd] = socket_rtt(dmn.sock, {"cmd": cmd, "target": tid})
    # ask: the floor for any command that waits for pcmond's answer (bench/ask.c)
    took = {k: [] for k in ("list", "pause", "resume", "true", "ask")}
    for _ in range(reps):
        for cmd in took:
            t0 = time.monotonic()
            r = (run(["/bin/true"]) if cmd == "true" else
                 run([os.path.join(BENCH, "ask"), dmn.sock, "list", tid]) if cmd == "ask" else
                 dmn.cli(cmd, tid))
            took[cmd].append((time.monotonic() - t0) * 1e3 if r.rc == 0 else None)
    for cmd, ms in took.items():
        ok = [m for m in ms if m is not None]
        med = statistics.median(ok) if len(ok) == len(ms) else None
        longest = max(ok) if med is not None else None
        if cmd in ("true", "ask"):
            out[f"{cmd}_ms"], out[f"{cmd}_ms_max"] = med, longest
        else:
            out["cli_ms"][cmd], out["cli_ms_max"][cmd] = med, longest
    return out


def pcmond_session(wl_cmd, mode, us, window=WINDOW_S, unwind="fp", latency=False, steady=0, opts=(),
                   settle=0):
    """Profile a workload through a fresh pcmond for window seconds, stop, list, and collect
    what it cost the daemon. latency: also time commands while the workload runs. steady:
    then also pcmond's CPU over that many more seconds (its steady cost). opts: more options
    of `pcmon start` (--no-python). settle: seconds the workload runs before it is attached
    (past an interpreter's start-up)."""
    dmn = Daemon()
    w = None
    cmd_ms = steady_ms = None
    try:
        w = start_workload(wl_cmd)
        time.sleep(settle)
        reset_hwm(dmn.pid)  # peak RSS from here on
        rss0 = proc_status_kb(dmn.pid, "VmRSS")
        s0 = dmn.json("status")
        cpu0, wcpu0, t0 = dmn.cpu(), proc_cpu(w.pid), time.monotonic()
        r = dmn.cli("start", "--pid", w.pid, f"--{mode}", "--unwind", unwind, "--interval", us, *opts, "--json")
        if r.rc != 0:
            raise RuntimeError(f"pcmon start: {r.why()}")
        tid = str(int(json.loads(r.out)["id"]))
        time.sleep(window)
        if latency:
            cmd_ms = latencies(dmn, tid)
        if steady:
            c_a = dmn.cpu()
            time.sleep(steady)
            steady_ms = (dmn.cpu() - c_a) * 1e3 / steady
        t_stop = time.monotonic()
        stop = dmn.cli("stop", tid)
        stop_ms = (time.monotonic() - t_stop) * 1e3
        # the target's CPU over the session, start and stop included (its rate: see expected)
        wcpu = proc_cpu(w.pid) - wcpu0
        secs = time.monotonic() - t0
        cpu_mid = dmn.cpu()
        if stop.rc != 0:
            raise RuntimeError(f"pcmon stop: {stop.why()}")
        # `pcmon list` of the stopped target: the first call symbolizes, the second is warm
        lat, lr = [], None
        for _ in range(2):
            t1 = time.monotonic()
            lr = dmn.cli("list", tid, "--json")
            lat.append((time.monotonic() - t1) * 1e3)
        if lr.rc != 0:
            raise RuntimeError(f"pcmon list: {lr.why()}")
        doc = json.loads(lr.out)
        cpu1, s1 = dmn.cpu(), dmn.json("status")
        hwm = proc_status_kb(dmn.pid, "VmHWM")
    finally:
        if w:
            w.kill()
        dmn.stop()
    smp = doc["summary"]["interrupts"]
    # the target's CPU while it was sampled: its rate over the session, for the time the
    # target ran (elapsed_s: from when pcmond started it to its stop, pauses left out). Not
    # its CPU from before `pcmon start` to after `pcmon stop`: each of those commands takes
    # 0.5 s to run beside 256 spinning threads, and that CPU was never sampled (it read as
    # 20 % of the samples missing)
    elapsed = doc["target"].get("elapsed_s") or secs
    expected = wcpu / secs * elapsed * 1e6 / us if mode == "virtual" and secs else None
    unw = next((c for c in doc["summary"].get("critical", []) if c["name"] == "unwalkable"), {})
    on_runs, on_ns = bpf_delta(s0, s1, ["on_sample"])
    sw_runs, sw_ns = bpf_delta(s0, s1, ["on_switch_btf", "on_switch_tp"])
    drains = s1.get("drains", 0) - s0.get("drains", 0)
    return {
        "seconds": secs, "samples": smp, "expected": expected,
        "delivered": smp / expected if expected else None,
        "lost": doc["summary"]["lost"], "lost_by_reason": doc["summary"].get("lost_by_reason"),
        "unwalkable": unw.get("count"), "unwalkable_reasons": unw.get("reasons"),
        "cpu_s": cpu_mid - cpu0, **per(cpu_mid - cpu0, secs, smp),
        "report_cpu_s": cpu1 - cpu_mid,
        "rss_start_mb": rss0 / 1024, "peak_rss_mb": hwm / 1024, "rss_growth_mb": (hwm - rss0) / 1024,
        "report_ms": lat[0], "report_ms_warm": lat[1], "stop_ms": stop_ms,
        "drains": drains, "latency": cmd_ms, "steady_ms_per_s": steady_ms,
        "drain_ms_avg": (s1.get("drain_ms_total", 0) - s0.get("drain_ms_total", 0)) / drains if drains else None,
        "drain_ms_max": s1.get("drain_ms_max"), "drain_fill_max": s1.get("drain_fill_max"),
        "drain_capacity": s1.get("drain_capacity"), "drains_late": s1.get("drains_late"),
        "drained_entries": s1.get("drained_entries", 0) - s0.get("drained_entries", 0),
        "bpf_runs": on_runs, "bpf_ns_avg": on_ns / on_runs if on_runs else None,
        "bpf_ms_per_s": on_ns / 1e6 / secs,
        "bpf_switch_runs": sw_runs, "bpf_switch_ns_avg": sw_ns / sw_runs if sw_runs else None,
        # --unwind dwarf: the engine's own unwinding, from `pcmon status`
        "unwound": s1.get("dwarf_samples_unwound", 0) - s0.get("dwarf_samples_unwound", 0),
        "unwind_ms": s1.get("dwarf_unwind_ms_total", 0) - s0.get("dwarf_unwind_ms_total", 0),
        "stack_bytes": s1.get("dwarf_stack_bytes_total", 0) - s0.get("dwarf_stack_bytes_total", 0),
        # ... and the samples BPF walked with CFI tables instead (docs/stacks.md)
        "cfi_walked": s1.get("cfi_walked", 0) - s0.get("cfi_walked", 0),
        "cfi_copied": s1.get("cfi_copied", 0) - s0.get("cfi_copied", 0),
        "python_pct": PYTHON.pct(doc),
    }


def perf_session(hz, wl_cmd, window=WINDOW_S, steady=0, nice=0):
    """perf record -g attached to the workload's pid, then perf report (perf's listing).
    steady: then also perf record's CPU over that many more seconds. nice: perf record's
    (pcmond's is ENGINE_NICE, -10)."""
    data = os.path.join(TMP, "session.perf.data")
    w = start_workload(wl_cmd)
    try:
        p = Child(["nice", "-n", nice, PERF, "record", "-e", "cpu-clock", "-F", hz, "-g", "-p", w.pid,
                   "-o", data])
        att = wait_attached(p.pid, w.pid)
        if att is None:
            r = p.wait(5) or p.kill()
            return {"error": f"perf record did not attach: {r.why()}"}
        wcpu0, t0 = att
        time.sleep(max(0.0, window - (time.monotonic() - t0)))
        steady_ms = None
        if steady:
            c_a = proc_cpu(p.pid)
            time.sleep(steady)
            steady_ms = (proc_cpu(p.pid) - c_a) * 1e3 / steady
        w.signal(signal.SIGSTOP)  # freeze the target: the samples end here
        wcpu, secs = proc_cpu(w.pid) - wcpu0, time.monotonic() - t0
        p.signal(signal.SIGINT)
        r = p.wait(300)
        # perf report is perf's symbolization step, the counterpart of `pcmon list`
        rr = run([PERF, "report", "-i", data, "--stdio", "--no-children"], timeout=4 * CELL_S)
    finally:
        w.kill()
    smp = perf_samples(r.err)
    if smp is None:
        return {"error": r.why()}
    expected = wcpu * hz
    return {"seconds": secs, "samples": smp, "expected": expected, "delivered": smp / expected if expected else None,
            "lost": perf_lost(data), "cpu_s": r.cpu, **per(r.cpu, secs, smp), "steady_ms_per_s": steady_ms,
            "peak_rss_mb": max(r.maxrss_kb, rr.maxrss_kb) / 1024, "record_peak_rss_mb": r.maxrss_kb / 1024,
            "data_mb": os.path.getsize(data) / 2**20,
            "report_ms": rr.wall * 1e3 if rr.rc == 0 else None, "report_cpu_s": rr.cpu,
            "report_error": rr.why() if rr.rc else None,
            "note": "perf record's CPU includes its start-up and exit"}


def bpftrace_session(hz, wl_cmd, window=WINDOW_S, steady=0):
    """bpftrace -p PID with the pid-filtered one-liner; SIGINT prints (symbolizes) the map.
    steady: then also its CPU over that many more seconds."""
    w = start_workload(wl_cmd)
    try:
        with BpfStats():
            b = Child([BPFTRACE, "-p", w.pid, "-e", bpftrace_prog(hz, w.pid)])
            att = b.wait_for("Attaching", 60) and wait_attached(b.pid, w.pid)
            if not att:
                r = b.wait(5) or b.kill()
                return {"error": r.why()}
            startup = proc_cpu(b.pid)
            wcpu0, t0 = att
            s0 = bpf_prog_stats(b.pid)
            time.sleep(max(0.0, window - (time.monotonic() - t0)))
            steady_ms = None
            if steady:
                c_a = proc_cpu(b.pid)
                time.sleep(steady)
                steady_ms = (proc_cpu(b.pid) - c_a) * 1e3 / steady
            s1 = bpf_prog_stats(b.pid)
            # freeze the target: bpftrace's probes stay attached until it has printed, and
            # a stopped target adds no samples meanwhile (and can still be symbolized)
            w.signal(signal.SIGSTOP)
            t_end = time.monotonic()
            wcpu = proc_cpu(w.pid) - wcpu0
            cpu_mid = proc_cpu(b.pid)
            # SIGINT makes bpftrace print its map and exit. Now and then it sleeps through
            # one (seen here with -p: it then lingered until the target exited), so while it
            # neither exits nor uses CPU (printing does), say it again; its print time
            # counts from the last SIGINT
            sigints, last_cpu, r = 0, None, None
            while sigints < 10:
                cpu_now = proc_cpu(b.pid)
                if sigints == 0 or cpu_now == last_cpu:
                    t1 = time.monotonic()
                    b.signal(signal.SIGINT)
                    sigints += 1
                last_cpu = cpu_now
                r = b.wait(2, kill=False)
                if r:
                    break
            r = r or b.wait(BPFTRACE_PRINT_S)
            secs = t_end - t0
            print_ms = (time.monotonic() - t1) * 1e3
    finally:
        w.kill()
    if r.limit:
        return {"error": f"bpftrace's exit print {r.why()}"}
    smp = bpftrace_samples(r.out)
    cpu = cpu_mid - startup
    expected = wcpu * hz
    res = {"seconds": secs, "samples": smp, "expected": expected, "delivered": smp / expected if expected else None,
           "startup_cpu_s": startup, "cpu_s": cpu, **per(cpu, secs, smp), "steady_ms_per_s": steady_ms,
           "peak_rss_mb": r.maxrss_kb / 1024, "report_ms": print_ms, "report_cpu_s": r.cpu - cpu_mid,
           "stacks_printed": len(re.findall(r"\]: \d+\s*$", r.out, re.M)), "sigints": sigints,
           "note": "CPU counted from attach; start-up (LLVM compile, load) is startup_cpu_s"}
    if s1[0] > s0[0]:
        res["bpf_runs"] = s1[0] - s0[0]
        res["bpf_ns_avg"] = (s1[1] - s0[1]) / (s1[0] - s0[0])
        res["bpf_ms_per_s"] = (s1[1] - s0[1]) / 1e6 / (window + steady)
    return res


def guarded(fn, *args, **kw):
    """A session's result, or its failure as a result."""
    try:
        return fn(*args, **kw)
    except Exception as e:  # noqa: BLE001 - a failure is a result
        return {"error": f"{type(e).__name__}: {e}"}


# ---------------------------------------------------------------------------- 2. profiler cost

def cost_workload():
    # two spinning threads: both CPUs busy in the target, a handful of stacks
    return [os.path.join(BENCH, "threads"), "2", "spin", str(WINDOW_S + 60)]


COST_FIGURE = "cpu_ms_per_s"  # cost's headline for a pcmond row: its CPU ms per second


def median_session(sessions):
    """The session whose CPU ms/s is the median of those that ran (the lower middle of an
    even number): a real session, every column from the same run. The first failure if
    none ran."""
    ok = sorted((x for x in sessions if "error" not in x), key=lambda x: x[COST_FIGURE])
    return ok[(len(ok) - 1) // 2] if ok else sessions[0]


def pcmond_cell(out, key, *args, **kw):
    """A pcmond row of the cost table: one session (pcmond_session's arguments). With
    BENCH_BASELINE, BENCH_REPS sessions with each tree's binaries, in turn: one session has
    no spread to judge noise by. The row then shows this tree's median session; every
    session, and each tree's CPU ms/s, go to the comparison (out["baseline"]). This tree's
    sessions past the first count as the comparison's time, like the baseline's."""
    if not BASELINE:
        out[key] = guarded(pcmond_session, *args, **kw)
        return
    runs = {"current": [], "baseline": []}
    for rep in range(REPS):
        for tree in trees_in_turn(rep):
            with binaries(tree), (for_baseline() if tree is None and rep > 0 else contextlib.nullcontext()):
                runs["baseline" if tree else "current"].append(guarded(pcmond_session, *args, **kw))
    bad = [x for x in runs["current"] if "error" in x]
    # a session that failed fails the row, whatever the others did
    out[key] = ({"error": f"{len(bad)} of {len(runs['current'])} sessions: {bad[0]['error']}"} if bad
                else median_session(runs["current"]))
    cells = out.setdefault("baseline", {"figure": COST_FIGURE, "cells": {}})["cells"]
    cells[key] = {side: stats([x[COST_FIGURE] for x in rs if "error" not in x]) for side, rs in runs.items()}
    cells[key]["errors"] = [x["error"] for x in runs["baseline"] if "error" in x]
    cells[key]["runs"] = runs
    # pcmond's CPU time is read from /proc in clock ticks: CPU ms/s moves in steps of one tick
    # over the session, and two runs that agree closely can be closer than that
    secs = [x["seconds"] for rs in runs.values() for x in rs if "error" not in x]
    cells[key]["resolution"] = 1e3 / CLK_TCK / min(secs) if secs else None


def cost(dwarf_err=None):
    out = {}
    hz, us = RATES[0]  # 100 Hz: pcmond only, for its idle cost (peers' is start-up and exit)
    log(f"cost: pcmond at {hz} Hz")
    pcmond_cell(out, f"pcmond @{hz}Hz", cost_workload(), "virtual", us, steady=STEADY_S)
    for hz, us in RATES[1:]:  # 1 kHz and 10 kHz
        steady = STEADY_S if hz == 1000 else 0
        log(f"cost: pcmond at {hz} Hz")
        pcmond_cell(out, f"pcmond @{hz}Hz", cost_workload(), "virtual", us, steady=steady)
        if dwarf_err is None:
            log(f"cost: pcmond --unwind dwarf at {hz} Hz")
            pcmond_cell(out, f"pcmond dwarf @{hz}Hz", cost_workload(), "virtual", us, unwind="dwarf")
        log(f"cost: perf record at {hz} Hz")
        out[f"perf @{hz}Hz"] = ({"error": tool_missing("perf")} if tool_missing("perf")
                               else guarded(perf_session, hz, cost_workload(), steady=steady))
        log(f"cost: bpftrace at {hz} Hz")
        out[f"bpftrace @{hz}Hz"] = ({"error": tool_missing("bpftrace")} if tool_missing("bpftrace")
                                   else guarded(bpftrace_session, hz, cost_workload(), steady=steady))
    return out


# ---------------------------------------------------------------------------- deep stacks

DEEP_WORKLOADS = {
    # main keeps a 64 KiB buffer: every stack spans more than 64 KiB
    "bigframe": lambda secs: [os.path.join(WORK, "bigframe_nofp"), str(secs)],
    # 40 levels of 4 KiB frames: 160 KiB
    "rec40x4k": lambda secs: [os.path.join(WORK, "rec40"), str(secs), "4096"],
}


def rooted_pct(listing, prog):
    p = {x["procedure"]: x for x in listing["procedures"]}
    n = listing["summary"]["counted"]
    return 100 * p.get(f"{prog}._start", {"deep": 0})["deep"] / n if n else None


def perf_dwarf_rooted(data):
    """perf's share of samples whose unwound stack reaches _start, and bytes a sample."""
    r = run([PERF, "script", "-i", data, "-F", "ip,sym"], timeout=4 * CELL_S)
    stacks, cur = [], []
    for line in r.out.splitlines() + [""]:
        if line.strip():
            cur.append(line.split()[-1])
        elif cur:
            stacks.append(cur)
            cur = []
    n = len(stacks)
    return (100 * sum(any(f == "_start" for f in s) for s in stacks) / n if n else None,
            os.path.getsize(data) / n if n else None)


def deep_stacks():
    """The default mode (dwarf) against fp and perf --call-graph dwarf on stacks deeper than
    64 KiB: target slowdown (bigframe: its iterations per CPU second, bare / profiled),
    stacks that reach _start, bytes of stack a sample, BPF time a sample and pcmond's CPU
    per 1000 samples."""
    out = {}
    secs = 3

    def speed(text):
        d = doc_with(text, "iters_per_cpu_s")
        return d["iters_per_cpu_s"] if d else None

    for name, cmd in DEEP_WORKLOADS.items():
        prog = os.path.basename(cmd(1)[0])
        bare = [speed(run(cmd(secs)).out) for _ in range(3)]
        if any(bare) and not all(bare):  # a workload that times itself, and a bare run failed
            raise RuntimeError(f"{prog} failed to run bare")
        bare = statistics.median(bare) if all(bare) else None
        for hz, us in RATES[1:]:
            row = {}
            for label, unwind in (("pcmon auto", "auto"), ("pcmon fp", "fp")):
                r = run(pcmon_run_cmd("virtual", unwind, us, cmd(secs)), env=pcmon_env(NO_DAEMON))
                d, v = doc_with(r.out, "summary"), speed(r.out)
                row[label] = {"slowdown": bare / v if bare and v else None,
                              "rooted_pct": rooted_pct(d, prog) if d else None,
                              "cut_short": d["summary"]["cut_short"] if d else None,
                              "samples": d["summary"]["counted"] if d else None,
                              "error": None if d else r.why()}
            if tool_missing("perf"):
                row["perf dwarf"] = {"error": tool_missing("perf")}
            else:
                data = os.path.join(TMP, "deep.perf.data")
                r = run(perf_record_cmd(hz, data, cmd(secs), unwind="dwarf"))
                rooted, bps = perf_dwarf_rooted(data) if r.rc == 0 else (None, None)
                v = speed(r.out)
                row["perf dwarf"] = {"slowdown": bare / v if bare and v else None,
                                     "rooted_pct": rooted, "bytes_per_sample": bps,
                                     "samples": perf_samples(r.err),
                                     "error": None if r.rc == 0 and rooted is not None else r.why()}
            sess = guarded(pcmond_session, cmd(WINDOW_S + 30), "virtual", us, unwind="auto")
            row["pcmon auto"]["session_error"] = sess.get("error")
            if "error" not in sess:
                row["pcmon auto"].update({
                    "pcmond_ms_per_1k": sess["cpu_ms_per_1k_samples"],
                    "bpf_ns_per_sample": sess["bpf_ns_avg"],
                    # over every sample: BPF walks most with CFI tables and copies none of them
                    "walked_in_bpf_pct": 100 * sess["cfi_walked"] / sess["samples"] if sess["samples"] else None,
                    "bytes_per_sample": sess["stack_bytes"] / sess["samples"] if sess["samples"] else None})
            out[f"{name} @{hz}Hz"] = row
    return out

# ---------------------------------------------------------------------------- 4. scale

def scale():
    out = {"threads": {}, "stacks": {}}
    for n in THREAD_COUNTS:
        for kind, mode in (("spin", "virtual"), ("sleep", "real")):
            key = f"{n} {'spinning' if kind == 'spin' else 'sleeping'} thread{'s' if n > 1 else ''}, {mode.upper()}"
            log(f"scale: {key}")
            out["threads"][key] = guarded(pcmond_session, [os.path.join(BENCH, "threads"), str(n), kind, "120"],
                                          mode, 1000, latency=(n == max(THREAD_COUNTS) and kind == "spin"))
    # unique stacks: every sample a new ~28-frame stack, vs. a control with a handful of
    # stacks; two threads at 10 kHz for STACKS_S (2 CPUs x 10 kHz x 5 s = 100k samples)
    for key, cmd in (("few stacks (2 spinning threads)", [os.path.join(BENCH, "threads"), "2", "spin", "120"]),
                     ("~100k unique stacks (manystacks)", MANYSTACKS)):
        log(f"scale: {key}")
        out["stacks"][key] = guarded(pcmond_session, cmd, "virtual", 100, window=STACKS_S)
    return out


MANYSTACKS = [os.path.join(BENCH, "manystacks"), "2", "120"]
TIMER_ROW = "no profiler: the timer alone, fixedwork"
THREADS_256 = [os.path.join(BENCH, "threads"), "256", "spin", "120"]


def scale_peers():
    """perf on the same unique-stack workload as pcmond, for as long; and on the 256
    spinning threads at 1 kHz, to see whether it delivers what pcmond does."""
    if tool_missing("perf"):
        return {"perf": {"error": tool_missing("perf")}, "perf_threads": {"error": tool_missing("perf")}}
    log("scale: perf on manystacks")
    out = {"perf": guarded(perf_session, 10000, MANYSTACKS, STACKS_S)}
    # at pcmond's priority: at its own, perf record gets a 257th of the CPU beside them and
    # captured nothing in 4 s here (header only, "woken up 0 times")
    log("scale: perf on 256 spinning threads")
    out["perf_threads"] = guarded(perf_session, 1000, THREADS_256, WINDOW_S, nice=-10)
    return out


def scale_bpftrace():
    """bpftrace on the same unique-stack workload, for as long (make bench-full: its exit
    print of the stacks it kept takes the better part of a minute here)."""
    if tool_missing("bpftrace"):
        return {"error": tool_missing("bpftrace")}
    log("scale: bpftrace on manystacks (its exit print takes a while)")
    return guarded(bpftrace_session, 10000, MANYSTACKS, STACKS_S)


# ---------------------------------------------------------------------------- 5. limits

def read_sysctl(name):
    try:
        with open("/proc/sys/" + name.replace(".", "/")) as f:
            return f.read().strip()
    except OSError:
        return None


def write_sysctl(name, value):
    try:
        with open("/proc/sys/" + name.replace(".", "/"), "w") as f:
            f.write(value)
    except OSError:
        pass


def limits(cal):
    rate_ctl = "kernel.perf_event_max_sample_rate"
    before = read_sysctl(rate_ctl)
    units = max(1000, cal["fixedwork_units"] // 2)
    # at the shortest intervals the target runs many times slower (on every profiler): cap
    # each run's wall time, and compare CPU time per unit of work
    fixed = fixed_cmd(units) + [str(SWEEP_MAX_WALL_S)]
    many = [os.path.join(BENCH, "manystacks"), "2", "1"]
    # (row name, tool, workload): pcmon on both workloads; the peers on fixedwork, to tell
    # what this machine's sampling interrupts cost from what pcmon adds
    sweeps = [(TIMER_ROW, "timer", fixed),
              ("pcmon, fixedwork (1 stack, 1 thread)", "pcmon", fixed),
              ("pcmon, manystacks (new stacks, 2 threads)", "pcmon", many),
              ("perf -g, fixedwork", "perf", fixed),
              ("bpftrace, fixedwork", "bpftrace", fixed)]
    out = {"sweep": {}, "highest_sustained": {}, "max_sample_rate_before": before}
    # the fixed work's bare CPU time, to turn the sweep's times into slowdowns
    bare = [doc_with(run(fixed).out, "units") for _ in range(2)]
    out["fixedwork_bare_unit_cpu_s"] = min(d["cpu_s"] / d["units"] for d in bare if d) if any(bare) else None
    if not all(bare):
        out["bare_error"] = f"{bare.count(None)} of {len(bare)} bare runs of fixedwork failed"
    try:
        # interval by interval, every tool at one before any at the next, so that drifting
        # load hits every row alike. A row stops at its first shortfall (an error, a loss,
        # or < 90 % delivered): shorter intervals cannot do better. The timer alone, the
        # floor, runs at every interval
        for name, tool, _ in sweeps:
            out["sweep"][name] = ([{"interval_us": us, "error": tool_missing(tool)} for us in SWEEP_US]
                                  if tool_missing(tool) else [])
        for us in SWEEP_US:
            for name, tool, cmd in sweeps:
                rows = out["sweep"][name]
                if tool_missing(tool):
                    continue
                if tool != "timer" and rows and (
                        "error" in rows[-1] or rows[-1].get("not_run") or rows[-1]["lost"]
                        or (rows[-1]["delivered"] or 0) < 0.9):
                    rows.append({"interval_us": us, "error": "not run: it fell short at a longer interval",
                                 "not_run": True})
                    continue
                log(f"limits: {name} at {us} us")
                rows.append(sweep_point(tool, us, cmd, out["fixedwork_bare_unit_cpu_s"]))
        # sustained = ran, lost nothing, and delivered >= 90% of the samples it should,
        # here and at every longer interval
        for name, _, _ in sweeps:
            best = None
            for row in out["sweep"][name]:
                if "error" in row or row["lost"] or (row["delivered"] or 0) < 0.9:
                    break
                best = row["interval_us"]
            out["highest_sustained"][name] = best
    finally:
        after = read_sysctl(rate_ctl)
        out["max_sample_rate_after"] = after
        if before and after != before:
            # the kernel lowers it when sampling interrupts take too long; put it back
            write_sysctl(rate_ctl, before)
    return out


def sweep_point(tool, us, cmd, bare_unit_cpu):
    """One run of cmd under tool at interval us: samples vs expected, lost, slowdown."""
    hz = round(1e6 / us)
    c, env = profiled(tool, "virtual", "fp", hz, us, cmd)
    r = run(c, env=env)
    own = doc_with(r.out, "proc_cpu_s")
    if r.rc != 0 or own is None:
        return {"interval_us": us, "error": r.why()}
    smp = samples_of(tool, r)
    missed = None
    if tool == "pcmon":
        s = doc_with(r.out, "summary")["summary"]
        lost, reasons = s["lost"], s.get("lost_by_reason")
        missed = s.get("ticks_missed")
    elif tool == "timer":
        lost, reasons = own.get("lost", 0), None
    elif tool == "perf":
        lost, reasons = perf_lost(os.path.join(TMP, "perf.data")), None
    else:
        lost, reasons = 0, None  # bpftrace keeps no count of what it drops: see delivered
    expected = own["proc_cpu_s"] * hz
    return {"interval_us": us, "samples": smp, "expected": expected,
            "delivered": smp / expected if smp is not None and expected else None,
            "lost": lost, "lost_by_reason": reasons, "lost_counted": tool != "bpftrace",
            # pcmon's count of the ticks the kernel missed (docs/sampling.md, missed ticks)
            "missed": missed,
            "missed_share": missed / expected if missed is not None and expected else None,
            "target_cpu_s": own.get("cpu_s") or own["proc_cpu_s"],
            "slowdown": own["cpu_s"] / own["units"] / bare_unit_cpu
            if own.get("units") and bare_unit_cpu else None}


# ---------------------------------------------------------------------------- table

def fmt_stat(s, digits=2):
    if not s:
        return "-"
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"


def fmt(x, spec=".1f", none="-"):
    return none if x is None else format(x, spec)


def session_header(add, scale=False, w=None):
    w = w or (40 if scale else 18)
    add(f"   {'session':<{w}}{'samples':>8}{'deliv':>6}{'lost':>6}"
        + (f"{'unwalk':>7}" if scale else "")
        + f"{'prof CPU':>9}{'CPU ms':>8}{'peak RSS':>9}{'listing':>9}{'listing':>9}"
        + (f"{'drain':>7}{'entries':>8}" if scale else f"{'BPF':>6}{'BPF':>6}"))
    add(f"   {'':<{w}}{'':>8}{'':>6}{'':>6}" + (f"{'':>7}" if scale else "")
        + f"{'ms/s':>9}{'/1k smp':>8}{'MB':>9}{'wall ms':>9}{'CPU ms':>9}"
        + (f"{'ms':>7}{'':>8}" if scale else f"{'ns':>6}{'ms/s':>6}"))


def session_row(add, key, c, scale=False, w=None):
    w = w or (40 if scale else 18)
    if "error" in c:
        add(f"   {key:<{w}}{failed(c['error'][:100])}")
        return
    if c.get("report_error"):  # the row's listing columns
        add(f"   {key:<{w}}{failed('perf report: ' + c['report_error'][:100])}")
    add(f"   {key:<{w}}{fmt(c.get('samples'), '.0f'):>8}{fmt(c.get('delivered'), '.2f'):>6}"
        f"{fmt(c.get('lost'), '.0f'):>6}" + (f"{fmt(c.get('unwalkable'), '.0f'):>7}" if scale else "")
        + f"{fmt(c.get('cpu_ms_per_s')):>9}{fmt(c.get('cpu_ms_per_1k_samples'), '.2f'):>8}"
        f"{fmt(c.get('peak_rss_mb')):>9}{fmt(c.get('report_ms'), '.0f'):>9}"
        f"{fmt(c['report_cpu_s'] * 1e3 if c.get('report_cpu_s') is not None else None, '.0f'):>9}"
        + (f"{fmt(c.get('drain_ms_avg')):>7}{fmt(c.get('drained_entries'), '.0f'):>8}" if scale
           else f"{fmt(c.get('bpf_ns_avg'), '.0f'):>6}{fmt(c.get('bpf_ms_per_s')):>6}"))


def failed(why):
    """A failed cell's text: the run exits 1 when the table has one (table_failures)."""
    return f"FAILED: {why}"


def missing(res, name):
    """A section's line when it has no figures (failed, or never measured)."""
    sec = res.get(name)
    if isinstance(sec, dict) and "error" in sec:
        return failed(sec["error"])
    return f"not measured yet ({'make bench-full' if name in FULL_ONLY else 'make bench'} measures it)"


def table_failures(text):
    """The lines of a table that show a failed cell (this run's, or a kept section's): FAILED,
    or any other spelling a section's code may use (tests/integration/test_bench_table.py
    looks for the same in the committed table)."""
    return [l.strip() for l in text.splitlines() if re.search(r"failed|skipped", l, re.I)]


def bare_failed(runs):
    """The FAILED line for a section's bare runs that failed ('' if none did)."""
    bad = [x["error"] for x in runs if isinstance(x, dict) and "error" in x]
    return failed(f"{len(bad)} of {len(runs)} bare runs: {bad[0][:100]}") if bad else ""


def table(res):
    L = []
    add = L.append

    def add_bare_failed(sec):
        line = bare_failed(sec.get("runs", {}).get("bare", []))
        if line:
            add(f"   {line}")

    env = res["environment"]
    measured = res.get("measured", {})
    add(f"pcmon benchmark — {env.get('form', 'make bench')}, {env['date']}, {env['cpus']} CPUs, "
        f"kernel {env['kernel']}, load average at start {env['loadavg_start']}")
    add(f"peers: {env['perf'] or 'perf missing'}; {env['bpftrace'] or 'bpftrace missing'}")
    now = [k for k, m in measured.items() if m.get("date") == env["date"]]
    kept = {}
    for k, m in measured.items():
        if k not in now:
            kept.setdefault((m.get("by"), m.get("date"), m.get("loadavg_start")), []).append(k)
    if kept:
        add(f"measured in this run: {', '.join(now) or 'the calibration only'}")
        for (by, date, load), names in kept.items():
            add(f"kept from an earlier run: {', '.join(names)}, measured by {by} on {date}, "
                f"load average at start {load}")
    add("")

    def origin(name, what=""):
        """Say when a kept section (or row: what) was measured, under its title."""
        m = measured.get(name)
        if m and m.get("date") != env["date"]:
            add(f"   ({what or 'this section'}: measured by {m.get('by')} on {m.get('date')}, "
                "not in this run)")

    sd = res.get("slowdown", {})
    add("1. TARGET SLOWDOWN — fixedwork's own CPU time under the profiler / bare "
        f"(median [min-max] of {REPS} runs)")
    origin("slowdown")
    if not sd or "error" in sd:
        add(f"   {missing(res, 'slowdown')}")
    else:
        add(f"   bare: {fmt_stat(sd['bare_cpu_s'], 3)} s CPU, {fmt_stat(sd['bare_wall_s'], 3)} s wall, "
            f"{sd['units']} units")
        add_bare_failed(sd)
        add(f"   {'profiler':<26}" + "".join(f"{f'{hz} Hz':>22}" for hz, _ in RATES))
        rows = [("pcmon VIRTUAL fp", ("pcmon", "virtual", "fp")), ("pcmon REAL fp", ("pcmon", "real", "fp")),
                ("pcmon VIRTUAL dwarf", ("pcmon", "virtual", "dwarf")), ("pcmon REAL dwarf", ("pcmon", "real", "dwarf")),
                ("perf record -g", ("perf", None, "fp")), ("perf --call-graph dwarf", ("perf", None, "dwarf")),
                ("bpftrace ustack", ("bpftrace", None, None))]
        errors = []
        for label, c in rows:
            if c[2] == "dwarf" and sd["dwarf"] != "ok":
                if c[1] == "virtual":
                    add(f"   {'pcmon dwarf (both modes)':<26}  n/a: {sd['dwarf']}")
                continue
            if not any(cell_key(c, hz) in sd["cells"] for hz, _ in RATES):
                continue
            cells = []
            for hz, _ in RATES:
                cell = sd["cells"].get(cell_key(c, hz), {})
                # a cell with a failed run is FAILED, whatever its other runs did
                cells.append("FAILED" if cell.get("errors") or not cell.get("cpu_ratio")
                             else fmt_stat(cell.get("cpu_ratio")))
                for e in cell.get("errors", [])[:1] or ([] if cell.get("cpu_ratio") else ["not run"]):
                    if f"{label} @{hz} Hz: {e}" not in errors:
                        errors.append(f"{label} @{hz} Hz: {e}")
            add(f"   {label:<26}" + "".join(f"{x:>22}" for x in cells))
        for e in errors:
            add(f"   {failed(e[:110])}")
        add("   wall-time ratio (median):  " + "   ".join(
            f"{lbl} " + "/".join(fmt((sd['cells'].get(cell_key(c, hz), {}).get('wall_ratio') or {}).get('median'), '.2f')
                                 for hz, _ in RATES)
            for lbl, c in (("pcmon-V", ("pcmon", "virtual", "fp")), ("pcmon-R", ("pcmon", "real", "fp")),
                           ("perf", ("perf", None, "fp")), ("bpftrace", ("bpftrace", None, None)))))
        add("   samples per run (median):  " + "   ".join(
            f"{lbl} " + "/".join(fmt((sd['cells'].get(cell_key(c, hz), {}).get('samples') or {}).get('median'), '.0f')
                                 for hz, _ in RATES)
            for lbl, c in (("pcmon-V", ("pcmon", "virtual", "fp")), ("pcmon-R", ("pcmon", "real", "fp")),
                           ("perf", ("perf", None, "fp")), ("bpftrace", ("bpftrace", None, None)))))
        pc = [(f"{c[1][0].upper()}-{c[2]}", c) for c in (("pcmon", "virtual", "fp"), ("pcmon", "real", "fp"),
                                                          ("pcmon", "virtual", "dwarf"), ("pcmon", "real", "dwarf"))
              if cell_key(c, RATES[0][0]) in sd["cells"]]
        add("   pcmon unwalkable % (median): " + "   ".join(
            f"{lbl} " + "/".join(fmt((sd['cells'][cell_key(c, hz)].get('unwalkable_pct') or {}).get('median'), '.1f')
                                 for hz, _ in RATES) for lbl, c in pc))
        add(f"   (each cell: {'/'.join(f'{hz} Hz' for hz, _ in RATES)}; wall time is noisier: other load shares the CPUs)")
    add("")

    co = res.get("cost", {})
    add(f"2. PROFILER COST — the profiler's own processes, 2 spinning target threads, ~{WINDOW_S:g} s "
        "attached by pid")
    origin("cost")
    if not co or "error" in co:
        add(f"   {missing(res, 'cost')}")
    else:
        session_header(add)
        for key, c in co.items():
            session_row(add, key, c)
        for k, c in co.items():
            if c.get("unwound") and c.get("unwind_ms"):
                add(f"   {k}: unwound {c['unwound']:.0f} stacks in {c['unwind_ms']:.0f} ms: "
                    f"{c['unwound'] / (c['unwind_ms'] / 1e3):,.0f} stacks/s per CPU "
                    "(the unwinding itself; prof CPU is all of pcmond)")
            if "startup_cpu_s" in c:
                add(f"   {k}: start-up (compile + load) {c['startup_cpu_s'] * 1e3:.0f} ms CPU, not in the columns")
            if "data_mb" in c:
                add(f"   {k}: perf.data {c['data_mb']:.1f} MB, lost {fmt(c.get('lost'), '.0f')}; "
                    "perf record's CPU includes its start-up and exit")
        steady = [(k, c["steady_ms_per_s"]) for k, c in co.items() if c.get("steady_ms_per_s") is not None]
        if steady:
            add(f"   steady CPU ms/s (the {STEADY_S:g} s after the window: no start-up, first symbolization or exit): "
                + ", ".join(f"{k} {v:.2f}" for k, v in steady))
        add("   prof = while sampling (per second of it, per 1000 samples); listing = pcmon list /")
        add("   perf report / bpftrace's exit print (wall ms, CPU ms); delivered = samples per")
        add("   target CPU second x rate; BPF = in-kernel program time, charged to the interrupted")
        add("   tasks, not to the profiler process; - = does not apply (perf record uses no BPF,")
        add("   bpftrace counts no lost samples)")
    add("")

    acc = res.get("accuracy", [])
    add("3. ACCURACY — share measured by the profiler vs the workload's own measurement (1 kHz, 4 s)")
    origin("accuracy")
    add(f"   {'profiler':<18}{'workload':<11}{'share':<11}{'procedure':<12}{'own %':>8}{'measured %':>12}"
        f"{'|err| pp':>10}{'samples':>9}")
    if not isinstance(acc, list) or not acc:
        add(f"   {missing(res, 'accuracy')}")
        acc = []
    for a in acc:
        lbl = f"{a['tool']} {a['mode']}"
        if "error" in a:
            add(f"   {lbl:<18}{a['workload']:<11}{failed(a['error'])}")
            continue
        for i, s in enumerate(a["shares"]):
            add(f"   {lbl if i == 0 else '':<18}{a['workload'] if i == 0 else '':<11}"
                f"{a['share'] if i == 0 else '':<11}{s['procedure']:<12}{s['own_pct']:>8.2f}"
                f"{s['measured_pct']:>12.2f}{s['abs_err_pp']:>10.2f}"
                f"{fmt(a.get('samples'), '.0f') if i == 0 else '':>9}")
    if acc:
        for peer in ("perf", "bpftrace"):
            add(f"   {peer + ' REAL':<18}{'spinsleep':<11}n/a: samples on-CPU time only (cpu-clock); "
                "off-CPU wall time needs sched tracing")
    add("   bpftrace: innermost frame, filtered to the workload's pid")
    add("")

    sc = res.get("scale", {})
    add(f"4. SCALE — a fresh pcmond per row, --unwind fp; threads at 1 kHz for {WINDOW_S:g} s, stacks at 10 kHz")
    origin("scale")
    if not sc or "error" in sc:
        add(f"   {missing(res, 'scale')}")
    else:
        session_header(add, scale=True)
        for key, c in list(sc.get("threads", {}).items()) + list(sc.get("stacks", {}).items()):
            session_row(add, key, c, scale=True)
        peers = res.get("scale_peers", {})
        if not peers or "error" in peers:
            add(f"   {'perf, ~100k unique stacks':<40}{missing(res, 'scale_peers')}")
        else:
            session_row(add, "perf, ~100k unique stacks", peers["perf"], scale=True)
            if "perf_threads" in peers:
                session_row(add, "perf, 256 spinning threads", peers["perf_threads"], scale=True)
            origin("scale_peers", "perf's rows")
        bt = res.get("scale_bpftrace", {})
        if not bt:
            add(f"   {'bpftrace, ~100k unique stacks':<40}{missing(res, 'scale_bpftrace')}")
        else:
            session_row(add, "bpftrace, ~100k unique stacks", bt, scale=True)
            origin("scale_bpftrace", "bpftrace's row")
        for key, c in list(sc.get("threads", {}).items()) + list(sc.get("stacks", {}).items()):
            if (c.get("stop_ms") or 0) > 1000:
                add(f"   {key}: `pcmon stop` took {c['stop_ms'] / 1000:.1f} s")
            lat = c.get("latency")
            if lat:
                add(f"   {key}: pcmond answers list/pause/resume in "
                    + "/".join(fmt(lat["socket_ms"].get(k), ".0f") for k in ("list", "pause", "resume"))
                    + " ms on its socket; the pcmon commands list/pause/resume take "
                    + "/".join(fmt(lat["cli_ms"].get(k), ".0f") for k in ("list", "pause", "resume"))
                    + " ms (median; longest "
                    + "/".join(fmt(lat.get("cli_ms_max", {}).get(k), ".0f") for k in ("list", "pause", "resume"))
                    + f"), stop {fmt(c.get('stop_ms'), '.0f')} ms; a bare request (bench/ask.c) "
                    + f"{fmt(lat.get('ask_ms'), '.0f')} ms (longest {fmt(lat.get('ask_ms_max'), '.0f')}), "
                    + f"true(1) {fmt(lat['true_ms'], '.0f')} ms (longest {fmt(lat.get('true_ms_max'), '.0f')})")
        for key, c in sc.get("stacks", {}).items():
            if c.get("drain_capacity"):
                add(f"   {key}: stop {fmt(c.get('stop_ms'), '.0f')} ms, listing {fmt(c.get('report_ms'), '.0f')} ms; "
                    f"longest drain {fmt(c.get('drain_ms_max'), '.0f')} ms, fullest map "
                    f"{fmt(c.get('drain_fill_max'), '.0f')} of {c['drain_capacity']} entries, "
                    f"{fmt(c.get('drains_late'), '.0f')} drains late (map half full)")
        if bt.get("stacks_printed"):
            add(f"   bpftrace printed {bt['stacks_printed']} stacks (its map's key limit) in "
                f"{bt['report_ms'] / 1000:.0f} s")
        add("   drain = mean wall ms of one pcmond drain (for each save every 5 s, and at once when BPF")
        add("   says the counts map is an eighth full); entries = entries drained")
        add("   from the kernel maps (~ distinct stacks for manystacks); unwalk = unwalkable stacks;")
        add("   deliv: samples / (the target's CPU while sampled x rate), that CPU being its rate over the")
        add("   session times the time pcmond sampled it (not the CPU it had while `pcmon start` and `stop`")
        add("   themselves ran: half a second each beside 256 spinning threads); perf's, from its attach")
        add("   to the target's SIGSTOP. perf on the threads runs at pcmond's priority (nice -10): at its")
        add("   own it gets a 257th of the CPU beside them, and recorded no sample")
        add("   - = does not apply: deliv under REAL (it samples sleeping threads too, not CPU time),")
        add("   the peers' unwalk, drain and entries (pcmond's own), bpftrace's lost (it counts none);")
        add(f"   the stacks rows (pcmon and peers) sample for {STACKS_S:g} s: 2 CPUs x 10 kHz x {STACKS_S:g} s = "
            f"{2 * 10000 * STACKS_S / 1000:.0f}k samples at most")
    add("")

    li = res.get("limits", {})
    add("5. LIMITS — pcmon run --virtual --unwind fp at each interval; perf and bpftrace beside it")
    origin("limits")
    if not li or "error" in li:
        add(f"   {missing(res, 'limits')}")
    else:
        add(f"   {'profiler, workload':<42}" + "".join(f"{f'{us} us':>10}" for us in SWEEP_US))
        if li.get("bare_error"):
            add(f"   {failed(li['bare_error'])}")
        errors = []
        for name, rows in li.get("sweep", {}).items():
            cells = []
            for row in rows:
                if "error" in row:
                    cells.append("n/a" if row.get("not_run") else
                                 "refused" if "interval" in row["error"] else "FAILED")
                    if cells[-1] == "FAILED":
                        errors.append(f"{name} at {row['interval_us']} us: {row['error']}")
                else:
                    cells.append(f"{fmt(row['delivered'], '.2f')}/{row['lost'] if row['lost_counted'] else '-'}")
            add(f"   {name:<42}" + "".join(f"{x:>10}" for x in cells))
            if any(row.get("missed") for row in rows):
                add(f"   {'  + ticks missed, counted by pcmon':<42}" + "".join(
                    f"{'n/a' if row.get('not_run') else fmt(row.get('missed_share'), '.2f'):>10}" for row in rows))
            if any(row.get("slowdown") for row in rows):
                add(f"   {'  fixedwork CPU time per unit / bare':<42}" + "".join(
                    f"{'n/a' if row.get('not_run') else fmt(row.get('slowdown'), '.2f'):>10}" for row in rows))
        for e in errors:
            add(f"   {failed(e[:110])}")
        add("   highest rate with zero lost and >= 90% delivered (there and at every longer interval):")
        for name, best in li.get("highest_sustained", {}).items():
            row = next((x for x in li["sweep"][name] if x.get("interval_us") == best), {})
            add(f"     {name:<42}" + (f"{1e6 / best:>8,.0f} Hz ({best} us)" if best else "  none of the swept intervals")
                + (f", fixedwork {row['slowdown']:.2f}x slower" if row.get("slowdown") else "")
                + ("" if row.get("lost_counted", True) else " (bpftrace counts no losses)"))
        reasons = {}
        for rows in li.get("sweep", {}).values():
            for row in rows:
                for k, v in (row.get("lost_by_reason") or {}).items():
                    reasons[k] = reasons.get(k, 0) + v
        if any(reasons.values()):
            add("   pcmon's lost samples by reason over the sweep: " + ", ".join(f"{k} {v}" for k, v in reasons.items() if v))
        add("   (each cell: delivered = samples / (target CPU s x rate), then lost samples, - for bpftrace,")
        add("   which counts none; n/a = not run: the row fell short at a longer interval, and a shorter")
        add("   one cannot do better; refused = the profiler does not take so short an interval;")
        add(f"   {TIMER_ROW}: fixedwork's own cpu-clock event, its samples read by")
        add("   itself: what the kernel's timer and sample alone deliver and cost, the floor under every row;")
        add("   ticks missed: those the kernel fired too late for and moved past, which no profiler")
        add("   samples and pcmon counts)")
        if li.get("max_sample_rate_after") != li.get("max_sample_rate_before"):
            add(f"   the kernel lowered perf_event_max_sample_rate {li['max_sample_rate_before']} -> "
                f"{li['max_sample_rate_after']} (sampling interrupts too long); restored")
    add("")

    pp = res.get("pingpong", {})
    add(f"6. REAL vs VIRTUAL on a context-switch-heavy workload (pipe ping-pong, 1 kHz, {PINGPONG_REPS} runs)")
    origin("pingpong")
    if not pp or "error" in pp:
        add(f"   {missing(res, 'pingpong')}")
    else:
        add(f"   bare: {fmt_stat(pp.get('bare_wall_s'), 3)} s wall for {pp['roundtrips']} round trips "
            f"({fmt(pp.get('roundtrip_us'), '.1f')} us each)")
        add_bare_failed(pp)
        add(f"   {'profiler':<26}{'wall ratio':>22}{'CPU ratio':>22}{'added us/switch':>18}")
        for key, c in pp.get("cells", {}).items():
            if not c["wall_ratio"] or c["errors"]:
                add(f"   {key:<26}  {failed((c['errors'] or ['no run'])[0])}")
                continue
            add(f"   {key:<26}{fmt_stat(c['wall_ratio']):>22}{fmt_stat(c['cpu_ratio']):>22}"
                f"{fmt((c.get('us_per_switch') or {}).get('median'), '.2f'):>18}")
        for key, rs in pp.get("runs", {}).items():
            lost = [x["lost"] for x in rs if x.get("lost")]
            if lost:
                add(f"   {key}: lost {statistics.median(lost):.0f} records per run (median; counted, "
                    "shown by pcmon list): a stack copy per context switch overruns the ring")
        add("   (both threads share the CPU pingpong starts on: 2 context switches per round trip)")
    add("")
    ca = res.get("calls", {})
    add(f"7. CALL COUNTING — callheavy: hot() called {CALLS_N} times; entry + return probes on it ({REPS} runs)")
    origin("calls")
    if not ca or "error" in ca:
        add(f"   {missing(res, 'calls')}")
    else:
        add(f"   bare: {fmt(ca['bare_wall_s'], '.3f')} s wall, {fmt(ca['bare_ns_per_call'], '.0f')} ns per call")
        add_bare_failed(ca)
        add(f"   {'profiler':<26}{'wall ratio':>22}{'added ns/call':>24}")
        for key, c in ca.get("cells", {}).items():
            if not c["wall_ratio"] or c["errors"]:
                add(f"   {key:<26}  {failed((c['errors'] or ['no run'])[0])}")
                continue
            add(f"   {key:<26}{fmt_stat(c['wall_ratio']):>22}{fmt_stat(c['ns_per_call'], 0):>24}")
        add(f"   pcmon's own calibration of a probe pair: {fmt_stat(ca.get('pcmon_calibrated_ns'), 0)} ns "
            "(subtracted from the times it reports); pcmon also keeps a per-thread shadow stack")
        add("   (recursion, unwinding, exits), which funclatency does not; 'pcmon node' is one probe per call;")
        add("   count --when, shadow: 'callheavy.main->*', from the shadow stack; count --when, walk:")
        add("   'callheavy.main->callheavy.hot', the user stack walked at every entry (both match every call);")
        add("   leg, sampled: a leg from hot() to its return, sampling at 1 kHz; tailed: the same leg with --tail")
    add("")
    ct = res.get("call_times", {})
    add(f"7b. CALL TIMES — cnt's work() called by a loop, ns a call: the program's own clock, pcmon count's "
        f"(probes' cost out, +- its error), funclatency's ({REPS} runs; median [min-max])")
    if not ct or "error" in ct:
        add(f"   failed: {ct.get('error', 'not run')}")
    else:
        add(f"   {'work()':>8} {'calls':>6} {'program':>24} {'pcmon count':>24} {'+- error':>18} "
            f"{'within':>7} {'funclatency (buckets)':>26}")
        for ns, c in ct.items():
            add(f"   {ns + ' ns':>8} {c['calls']:>6} {fmt_stat(c['program_ns'], 0):>24} "
                f"{fmt_stat(c['pcmon_ns'], 0):>24} {fmt_stat(c['pcmon_err_ns'], 0):>18} "
                f"{c['within_error']:>7} {fmt_stat(c['funclatency_ns'], 0):>26}")
        add("   pcmon's error is the probes' measured spread times the hits a time holds; a time below it is")
        add("   shown below resolution; funclatency subtracts nothing and keeps log2 buckets only")
    add("")
    ds = res.get("deep_stacks", {})
    add("8. DEEP STACKS — bigframe (64 KiB in main, no frame pointers) and rec40x4k (40 x 4 KiB): "
        "one run a cell")
    origin("deep_stacks")
    if not ds or "error" in ds:
        add(f"   {missing(res, 'deep_stacks')}")
    else:
        add(f"   {'workload, rate':<22}{'profiler':<13}{'slowdown':>9}{'to _start':>11}"
            f"{'bytes/sample':>13}{'BPF ns/sample':>14}{'pcmond ms/1k':>13}")
        for key, row in ds.items():
            for tool, c in row.items():
                why = c.get("error") or c.get("session_error") if isinstance(c, dict) else c
                if why:
                    add(f"   {key:<22}{tool:<13}{failed(str(why)[:100])}")
                    continue
                add(f"   {key:<22}{tool:<13}{fmt(c.get('slowdown'), '.3f'):>9}"
                    f"{fmt(c.get('rooted_pct'), '.1f') + ' %':>11}{fmt(c.get('bytes_per_sample'), '.0f'):>13}"
                    f"{fmt(c.get('bpf_ns_per_sample'), '.0f'):>14}{fmt(c.get('pcmond_ms_per_1k'), '.1f'):>13}")
        add("   (slowdown: bigframe's iterations per CPU second, bare / profiled; perf copies 8 KiB a "
            "sample by default, at most 64 KiB;")
        add("   - = does not apply: rec40 does not time itself, fp copies no stack, perf runs no BPF)")
        walked = [(k, r["pcmon auto"]["walked_in_bpf_pct"]) for k, r in ds.items()
                  if isinstance(r.get("pcmon auto"), dict) and
                  r["pcmon auto"].get("walked_in_bpf_pct") is not None]
        if walked:
            add("   pcmon auto's samples walked in BPF with CFI tables (the rest copied, bytes/sample "
                "over all): " + ", ".join(f"{k} {v:.1f} %" for k, v in walked))
    add("")

    fl = res.get("fleet", {})
    add(f"10. SERVING — fixedwork ({FLEET_WORK_S} s) under a published pcmond target at 1 kHz: bare "
        "pcmond, scraped (9 s windows back to back), pushing to Pyroscope and OTLP every 2 s")
    origin("fleet")
    if not fl or "error" in fl:
        add(f"   {missing(res, 'fleet')}")
    else:
        add(f"   {'pcmond':<28}{'slowdown':>22}{'pcmond ms/s':>22}  what it served")
        for cfg, what in (("pcmond", ""), ("scraped", "scrapes"), ("pushed", "pushes")):
            c = fl[cfg]
            add(f"   {cfg:<28}{fmt_stat(c['slowdown'], 3):>22}{fmt_stat(c['pcmond_ms_per_s'], 1):>22}"
                f"  {c[what] if what else ''} {what}")
    add("")

    ch = res.get("churn", {})
    add(f"9. SYSTEM-WIDE CHURN — every process at {CHURN_HZ} Hz while `make clean; make -j2` of this "
        f"tree loops, {ch.get('pcmond', {}).get('seconds', CHURN_S):g} s each")
    origin("churn")
    if not ch or "error" in ch:
        add(f"   {missing(res, 'churn')}")
    else:
        pc, pf = ch["pcmond"], ch["perf"]
        add(f"   {'profiler':<26}{'CPU ms/s':>9}{'RSS MB':>8}{'RSS growth':>11}  what it counted")
        add(f"   {'pcmond, start --all':<26}{fmt(pc.get('cpu_ms_per_s')):>9}{fmt(pc.get('rss_end_mb')):>8}"
            f"{fmt(pc.get('rss_growth_second_half_mb'), '+.1f'):>11}  {pc.get('counted')} samples, "
            f"{pc.get('lost')} lost, foreignPcs {fmt(pc.get('foreign_pct'))} %, unwalkable "
            f"{fmt(pc.get('unwalkable_pct'))} %")
        if "error" in pf:
            add(f"   {'perf record -a -g':<26}{failed(pf['error'])}")
        else:
            add(f"   {'perf record -a -g':<26}{fmt(pf.get('cpu_ms_per_s')):>9}{fmt(pf.get('max_rss_mb')):>8}"
                f"{'':>11}  {fmt(pf.get('data_mb'))} MB of perf.data (perf report not included)")
        add("   (RSS growth: over the second half; pcmond's RSS counts its BPF rings' mappings)")
    add("")

    def runtime_cells(rt, sec, width):
        """A runtime section's bare line, its table of slowdowns by profiler and rate (labels
        @width wide) and the samples per run."""
        label = lambda t, w: rt.cell(t, w, 0).rsplit(" @", 1)[0]  # noqa: E731
        cell = lambda t, w, hz: sec["cells"].get(rt.cell(t, w, hz), {})  # noqa: E731
        add(f"   bare: {fmt_stat(sec['bare_cpu_s'], 3)} s CPU, {fmt_stat(sec['bare_wall_s'], 3)} s wall, "
            f"{sec['units']} units")
        add_bare_failed(sec)
        add(f"   {'profiler':<{width}}" + "".join(f"{f'{hz} Hz':>22}" for hz, _ in RATES[:2]))
        for tool, what in rt.configs:
            cells = [cell(tool, what, hz) for hz, _ in RATES[:2]]
            add(f"   {label(tool, what):<{width}}" + "".join(
                f"{'FAILED' if c.get('errors') or not c.get('cpu_ratio') else fmt_stat(c['cpu_ratio']):>22}"
                for c in cells))
            for c in cells:
                for e in c.get("errors", [])[:1] or ([] if c.get("cpu_ratio") else ["no run"]):
                    add(f"   {failed(f'{label(tool, what)}: {e[:100]}')}")
        add("   samples per run (median): " + "   ".join(
            f"{label(t, w)} " + "/".join(fmt((cell(t, w, hz).get("samples") or {}).get("median"), ".0f")
                                         for hz, _ in RATES[:2]) for t, w in rt.configs))

    py = res.get("python", {})
    add("11. PYTHON FRAMES — bench/pywork.py (pure Python, eight calls deep) on CPython 3.11: its own "
        f"CPU time for the fixed work / bare (median [min-max] of {REPS} runs)")
    origin("python")
    if not py or "error" in py:
        add(f"   {missing(res, 'python')}")
    else:
        runtime_cells(PYTHON, py, 26)
        add("   samples with Python frames (pcmon, median %): " + "/".join(
            fmt((py["cells"].get(PYTHON.cell("pcmon", "python", hz), {}).get("python_pct") or {}).get("median"), ".1f")
            for hz, _ in RATES[:2]) + " (100 Hz/1000 Hz); flagged python_unknown (not known yet): "
            + "/".join(fmt((py["cells"].get(PYTHON.cell("pcmon", "python", hz), {}).get("unknown_pct") or {}).get("median"), ".1f")
                       for hz, _ in RATES[:2]) + " %")
        add(f"   the profiler attached by pid for ~{WINDOW_S:g} s (pcmond: a fresh one, default unwinder):")
        session_header(add)
        for key, c in py.get("sessions", {}).items():
            session_row(add, key.replace("pcmon, Python frames", "pcmond py").replace("pcmon --no-python", "pcmond no-py")
                        .replace("perf record -g", "perf -g"), c)
        add("   (pcmond py = with Python frames, no-py = --no-python; prof CPU ms/1k smp is the headline:")
        add("   what reading and naming Python frames costs the daemon per 1000 samples; - = does not")
        add("   apply: perf runs no BPF)")
        vers = py.get("versions") or {}
        add(f"   each of pyenv's CPython builds (3.8-3.13) there is, pcmond with Python frames at "
            f"{RATES[1][0]} Hz, attached by pid 1 s after it started:" if vers else "   pyenv's CPython builds: none here")
        if vers:
            session_header(add)
        for v, c in vers.items():
            session_row(add, f"{v} py {fmt(c.get('python_pct'), '.1f')}%", c)
        if vers:
            add("   (py N%: the samples that carry Python frames; the others are flagged or the interpreter's C)")
            add(f"   pcmond's CPU ms/s over the {PY_STEADY_S} s after each window (steady, past the first read of "
                "that build's libpython): " + ", ".join(f"{v} {fmt(c.get('steady_ms_per_s'), '.1f')}"
                                                       for v, c in vers.items()))
    add("")

    for no, rt, program in ((12, JAVA, "JavaWork (Java, eight calls deep) on the JDK there is, no JVM flag"),
                            (13, NODE, "bench/jswork.js (JavaScript, eight calls deep) on the node there is, "
                                       "no node flag")):
        jv = res.get(rt.key, {})
        add(f"{no}. {rt.name.upper()} FRAMES — {program}: its own CPU time for the fixed work / bare "
            f"(median [min-max] of {REPS} runs)")
        origin(rt.key)
        if not jv or "error" in jv:
            add(f"   {missing(res, rt.key)}")
            add("")
            continue
        label = lambda t, w: rt.cell(t, w, 0).rsplit(" @", 1)[0]  # noqa: E731
        cell = lambda t, w, hz: jv["cells"].get(rt.cell(t, w, hz), {})  # noqa: E731
        runtime_cells(rt, jv, 30)
        for what in (rt.key, "fp"):
            add(f"   samples walked to {rt.main.split('.', 1)[1]} ({label('pcmon', what)}, median %): "
                + "/".join(fmt((cell("pcmon", what, hz).get(f"{rt.key}_pct") or {}).get("median"), ".1f")
                           for hz, _ in RATES[:2]) + f" (100 Hz/1000 Hz); cut short `{rt.cut}`: "
                + "/".join(fmt((cell("pcmon", what, hz).get("cut_pct") or {}).get("median"), ".1f")
                           for hz, _ in RATES[:2]) + " %")
        add(f"   the profiler attached by pid for ~{WINDOW_S:g} s (pcmond: a fresh one, default unwinder):")
        session_header(add, w=27)
        for key, c in jv.get("sessions", {}).items():
            session_row(add, key.replace(rt.labels[rt.key], f"pcmond {rt.cut}")
                        .replace(rt.labels["no-" + rt.key], f"pcmond no-{rt.cut}")
                        .replace("perf record -g", "perf -g"), c, w=27)
        note = (f"(prof CPU ms/1k smp is the headline: what walking and naming {rt.name} frames costs "
                f"the daemon per 1000 samples, beside {rt.off}; {rt.perf_note})").split()
        line = "  "
        for word in note:  # (wrapped at 95 columns)
            if len(line) + 1 + len(word) > 95:
                add(line)
                line = "  "
            line += " " + word
        add(line)
        add("")
    al = res.get("alloc", {})
    add("14. ALLOCATIONS — bench/mallocwork.c (malloc and free, a tenth kept a while), at pcmon's default "
        f"rate: its own time for the same units / bare (median [min-max] of {REPS} runs)")
    origin("alloc")
    if not al or "error" in al:
        add(f"   {missing(res, 'alloc')}")
    else:
        for prog, u in al.get("units", {}).items():
            add(f"   {prog}: {u['units']} units, bare {fmt_stat(u['bare_wall_s'], 3)} s wall")
            add(f"   {'profiler':<30}{'CPU ratio':>26}{'wall ratio':>26}{'added ns/unit':>16}")
            for cell, c in al["cells"][prog].items():
                if c.get("errors") or not c.get("cpu_ratio"):
                    add(f"   {cell:<30}{failed((c.get('errors') or ['no run'])[0][:100])}")
                    continue
                add(f"   {cell:<30}{fmt_stat(c['cpu_ratio']):>26}{fmt_stat(c['wall_ratio']):>26}"
                    f"{fmt((c.get('ns_per_unit') or {}).get('median'), '.0f'):>16}")
        add("   memleak (libbpf-tools): " + ("not in this table yet" if al.get("memleak") else
            "n/a here: Debian's libbpf-tools 0.26 has no memleak, and bcc's needs kernel headers"))
        add("   (pcmon's uprobes trap at every call of the allocator's functions, sampled or not (with")
        add("   uprobe sessions, kernel 6.13 on, a return only where a call is sampled): about a")
        add("   microsecond a call, which sampling by bytes does not save; heaptrack runs inside the")
        add("   program, preloaded)")
    add("")
    form = env.get("form", "make bench")
    add(f"total benchmark time ({form}): {res['total_s'] / 60:.1f} min ({res['total_s']:.0f} s"
        + (f", over the {DEFAULT_FORM_S / 60:g} minutes it should take" if form == "make bench"
           and res["total_s"] > DEFAULT_FORM_S else "") + "); "
        + ", ".join(f"{k} {v:.0f} s" for k, v in res["section_s"].items()))
    old = {k: m["s"] for k, m in measured.items() if k not in now and m.get("s") is not None}
    if old:
        add("kept sections, as long as they took when measured: "
            + ", ".join(f"{k} {v:.0f} s" for k, v in old.items())
            + (f"; make bench-full: about {(res['total_s'] + sum(old.values())) / 60:.0f} min"
               if form == "make bench" else ""))
    return "\n".join(L)


# ---------------------------------------------------------------------------- baseline table

# section: (its number and name in the main table, what its headline figure is, digits,
# repetitions a side)
BASELINE_SECTIONS = {
    "cost": ("2. cost", "pcmond's CPU ms per second of profiling (prof CPU ms/s)", 2, REPS),
    "pingpong": ("6. ping-pong", "wall time / bare (wall ratio)", 3, PINGPONG_REPS),
    "calls": ("7. call counting", "wall ns added per call (added ns/call)", 0, REPS),
}
NOISE_RULE = ("within noise: |this tree's median - the baseline's| <= noise, the wider of the two "
              "spreads (max - min over each tree's runs of the cell), or the figure's resolution if "
              "that is larger (cost: one 1/CLK_TCK tick of pcmond's CPU over the session); with one "
              "run a side there is no spread, and no verdict")


def judged(cur, base, resolution=None):
    """The verdict on one cell's figure (stats of each tree's runs): the medians' difference
    (this tree - baseline, and in % of the baseline) against the runs' spread (NOISE_RULE).
    The wider spread, not the narrower: on a shared machine either tree may have drawn the
    quiet minutes, and a difference that a rerun of the same binaries would show is noise.
    Never less than the figure's resolution: a difference below one step of the clock that
    measures it says nothing, however well the runs agree."""
    if not cur or not base:
        return {"diff": None, "diff_pct": None, "spread": None, "noise": None, "within_noise": None}
    diff = cur["median"] - base["median"]
    spread = max(cur["max"] - cur["min"], base["max"] - base["min"])
    noise = max(spread, resolution or 0)
    return {"diff": diff, "diff_pct": diff * 100 / abs(base["median"]) if base["median"] else None,
            "spread": spread, "noise": noise,
            "within_noise": abs(diff) <= noise if min(cur["n"], base["n"]) > 1 else None}


def comparison(parts):
    """The comparison's rows, from each section's baseline part (section name -> part)."""
    rows = []
    for name, part in parts.items():
        for key, c in part.get("cells", {}).items():
            rows.append({"section": name, "cell": key, "figure": part["figure"],
                         "current": c["current"], "baseline": c["baseline"],
                         "baseline_error": None if c["baseline"] else (c["errors"] or ["no run"])[0],
                         "resolution": c.get("resolution"), "predates": bool(predates(c)),
                         **judged(c["current"], c["baseline"], c.get("resolution"))})
    return rows


def predates(c):
    """A cell the baseline cannot run: every run of it refused as a usage error (pcmon's exit
    status 2: options of a feature the baseline's tree is older than, as --tail)."""
    errs = c.get("errors") or []
    return not c.get("baseline") and errs and all("exit status 2" in str(e) for e in errs)


def verdict(row):
    if not row["current"]:
        return "failed here (see the table above)"
    if row.get("predates"):
        return "n/a: the baseline predates it (exit 2)"
    if not row["baseline"]:
        return f"baseline failed: {row['baseline_error'][:60]}"
    if row["within_noise"] is None:
        return "a side ran once: not judged"
    return "within noise" if row["within_noise"] else "BEYOND noise"


def baseline_table(res):
    """The comparison, printed after the main table (not put in bench/README.md: that shows
    this tree's figures alone)."""
    L = []
    add = L.append
    b = res["baseline"]
    add("BASELINE — this tree's binaries vs BENCH_BASELINE's, each pcmon cell measured with both, in turn, "
        "in this run")
    add(f"   this tree: {ROOT} at {b.get('this_commit') or '?'}")
    add(f"   baseline:  {BASELINE} at {b.get('commit') or '?'}")
    add(f"   {'cell':<26}{'this tree':>22}{'baseline':>22}{'difference':>20}{'noise':>9}   verdict")
    for name, (title, figure, digits, reps) in BASELINE_SECTIONS.items():
        rows = [r for r in b.get("comparison", []) if r["section"] == name]
        add(f"   {title}: {figure}, median [min-max] of {reps} run{'s' if reps > 1 else ''} a side")
        if not rows:
            add(f"     failed: {res.get(name, {}).get('error', 'not run')}")
        for r in rows:
            diff = ("-" if r["diff"] is None else f"{r['diff']:+.{digits}f}"
                    + (f" ({r['diff_pct']:+.1f} %)" if r["diff_pct"] is not None else ""))
            add(f"     {r['cell']:<24}{fmt_stat(r['current'], digits):>22}{fmt_stat(r['baseline'], digits):>22}"
                f"{diff:>20}{fmt(r['noise'] if r['within_noise'] is not None else None, f'.{digits}f'):>9}"
                f"   {verdict(r)}")
    notes = (f"{NOISE_RULE}. BEYOND: the binaries changed it, or load hit one side only (run again "
             "to tell which). The two trees take turns going first; the baseline's runs (and, for cost, "
             f"this tree's after the first) took {BASELINE_S / 60:.1f} min of this run. Every run: "
             "bench/results.json, \"baseline\".")
    L += ["   " + line for line in textwrap.wrap(notes, 100)]
    return "\n".join(L)


def update_readme(text):
    """Put the table between the markers in bench/README.md."""
    begin, end = "<!-- BEGIN LATEST TABLE -->", "<!-- END LATEST TABLE -->"
    try:
        with open(README) as f:
            doc = f.read()
    except OSError:
        return
    if begin not in doc or end not in doc:
        return
    head, rest = doc.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(README, "w") as f:
        f.write(f"{head}{begin}\n```\n{text}\n```\n{end}{tail}")


# ---------------------------------------------------------------------------- main

def version_of(cmd):
    try:
        r = run(cmd, timeout=20)
        return (r.out or r.err).strip().splitlines()[0]
    except (OSError, IndexError):
        return None


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sink:
    """An HTTP receiver on 127.0.0.1 that takes every POST and answers 200 (a push's peer)."""

    def __init__(self):
        import http.server
        import threading

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


FLEET_WORK_S = 12  # each run's fixed work: a scrape of 9 s every 10 s fits one in


def fleet(cal):
    """What serving costs the sampling path: fixedwork's wall time under a published pcmond
    target at 1 kHz, bare pcmond, with `go tool pprof`-like scrapes of 9 s back to back
    (Alloy's interval - 1 at 10 s), and pushing to Pyroscope and OTLP every 2 s."""
    import threading
    import urllib.request
    units = int(cal["fixedwork_units"] * FLEET_WORK_S / WORK_S)
    configs = ("pcmond", "scraped", "pushed")
    runs = {k: [] for k in ("bare",) + configs}
    for _ in range(REPS):
        d = doc_with(run(fixed_cmd(units), timeout=CELL_S * 3).out, "units")
        runs["bare"].append({"wall_s": d["wall_s"], "cpu_s": d["cpu_s"]})
        for cfg in configs:
            port, sink = free_port(), Sink() if cfg == "pushed" else None
            more = ["--http", port] if cfg == "scraped" else \
                ["--push", sink.url, "--otlp", sink.url, "--push-interval", 2] if sink else []
            dmn = Daemon(*more)
            scrapes, stop = [], threading.Event()
            try:
                w = subprocess.Popen(fixed_cmd(units), stdout=subprocess.PIPE, text=True)
                r = dmn.cli("start", "--pid", w.pid, "--publish", "--interval", 1000, "--json")
                if r.rc != 0:
                    raise RuntimeError(f"pcmon start: {r.why()}")
                cpu0 = dmn.cpu()

                def scraper():
                    while not stop.is_set():
                        t = time.monotonic()
                        try:
                            with urllib.request.urlopen(f"http://127.0.0.1:{port}/debug/pprof/"
                                                        "profile?seconds=9", timeout=30) as resp:
                                scrapes.append((len(resp.read()), time.monotonic() - t))
                        except OSError:
                            return
                th = threading.Thread(target=scraper) if cfg == "scraped" else None
                if th:
                    th.start()
                out, _ = w.communicate(timeout=CELL_S * 3)
                stop.set()
                cpu = dmn.cpu() - cpu0
                st = dmn.json("status")
            finally:
                dmn.stop()
                if sink:
                    sink.close()
            if th:
                th.join(30)
            d = doc_with(out, "units")
            runs[cfg].append({"wall_s": d["wall_s"], "cpu_s": d["cpu_s"],
                              "pcmond_ms_per_s": cpu * 1e3 / d["wall_s"], "scrapes": len(scrapes),
                              "pushes": st.get("push", {}).get("sent")})
    bare = statistics.median(r["wall_s"] for r in runs["bare"])
    out = {"work_s": FLEET_WORK_S, "bare_wall_s": bare, "runs": runs}
    for cfg in configs:
        rs = runs[cfg]
        out[cfg] = {"slowdown": stats([r["wall_s"] / bare for r in rs]),
                    "pcmond_ms_per_s": stats([r["pcmond_ms_per_s"] for r in rs]),
                    "scrapes": sum(r["scrapes"] for r in rs),
                    "pushes": sum(r["pushes"] or 0 for r in rs)}
    return out


# ---------------------------------------------------------------------------- 11. Python frames

PY311 = "/usr/bin/python3.11"
PYWORK = os.path.join(ROOT, "bench", "pywork.py")


def pywork_cmd(units, max_wall=None):
    return [PY311, PYWORK, str(units)] + ([str(max_wall)] if max_wall else [])


JSWORK = os.path.join(ROOT, "bench", "jswork.js")
JAVA_CLASSES = os.path.join(ROOT, ".output", "workloads", "java")


class Runtime:
    """A JIT runtime's section (Java, Node): a program of eight calls deep that times its own
    fixed work, under pcmon with its frames, without them (@off, pcmon's option) and with
    --unwind fp, beside perf record -g; @main is the procedure every sample of the work runs
    under, @cut the cut-short reason that flags a frame of the runtime's not walked."""

    def __init__(self, key, name, cmd, missing, off, main, cut, probe_units, min_units=0, fp=True,
                 cut_key="cut_pct", bare_last=False,
                 perf_note="perf -g walks frame pointers, which JIT code has not: its stacks stop there"):
        self.key, self.name, self.cmd, self.ready = key, name, cmd, missing
        self.off, self.main, self.cut, self.probe_units = off, main, cut, probe_units
        self.min_units, self.cut_key, self.bare_last = min_units or probe_units, cut_key, bare_last
        self.perf_note = perf_note
        self.configs = ([("pcmon", key), ("pcmon", "no-" + key)] + ([("pcmon", "fp")] if fp else [])
                        + [("perf", None)])
        self.labels = {key: f"pcmon, {name} frames", "no-" + key: f"pcmon {off}",
                       "fp": "pcmon --unwind fp", None: "perf record -g"}

    def cell(self, tool, what, hz):
        return f"{self.labels[what]} @{hz}Hz"

    def pct(self, doc):
        """% of a listing's counted samples walked to @main (its deep count; @main ending in
        a dot: the deepest of the procedures it starts)."""
        n = doc["summary"].get("counted") if doc else None
        deep = [p["deep"] for p in doc.get("procedures", [])
                if (p["procedure"].startswith(self.main) if self.main.endswith(".")
                    else p["procedure"] == self.main)] if n else []
        return 100 * max(deep) / n if n and deep else (0.0 if n else None)


JAVA = Runtime("java", "Java",
               lambda units, max_wall=None: ["java", "-cp", JAVA_CLASSES, "JavaWork", str(units)]
               + ([str(max_wall)] if max_wall else []),
               lambda: None if shutil.which("java") and os.path.exists(os.path.join(JAVA_CLASSES, "JavaWork.class"))
               else "no java, or no JavaWork.class (make workloads, with a JDK)",
               "--no-java", "java.JavaWork.main", "java", 20000)
NODE = Runtime("node", "JavaScript",
               lambda units, max_wall=None: ["node", JSWORK, str(units)] + ([str(max_wall)] if max_wall else []),
               lambda: None if shutil.which("node") else "no node (make deps installs nodejs)",
               "--no-python", "js.jswork.main", "js", 200000,
               perf_note="perf -g walks V8's frame pointers too, and names its JIT code only from a "
                         "perf map (node --perf-basic-prof)")


def runtime_frames(rt):
    """@rt's program under pcmon (its frames, @rt.off, --unwind fp) at 100 Hz and 1 kHz beside
    perf record -g in the same run: its own CPU time for a fixed amount of work over bare, the
    share of samples walked to its main; then a fresh pcmond and perf record attached by pid
    to a long run for BENCH_WINDOW_S: their CPU per second and per 1000 samples, memory."""
    if rt.ready():  # (what is missing)
        return {"error": rt.ready()}
    per_unit = []
    for _ in range(2):
        d = doc_with(run(rt.cmd(rt.probe_units)).out, "units")
        per_unit.append(d["cpu_s"] / d["units"])
    units = max(rt.min_units, int(WORK_S / min(per_unit)))
    rates = RATES[:2]
    cells = [(c, hz, us) for c in rt.configs for hz, us in rates]
    runs = {"bare": [], **{rt.cell(*c, hz): [] for c, hz, _ in cells}}
    for rep in range(REPS):
        log(f"{rt.key}: repetition {rep + 1}/{REPS} ({len(cells) + 1} runs)")
        order = cells[rep * 2 % len(cells):] + cells[:rep * 2 % len(cells)]
        for cell in [None] + order:
            if cell is None:
                key, cmd, env, tool = "bare", rt.cmd(units), None, None
            else:
                (tool, what), hz, us = cell
                key = rt.cell(tool, what, hz)
                if tool_missing(tool):
                    runs[key].append({"error": tool_missing(tool)})
                    continue
                if tool == "pcmon":
                    cmd = [PCMON, "run", "--virtual", "--interval", str(us), "--json",
                           *(["--unwind", "fp"] if what == "fp" else []),
                           *([rt.off] if what == "no-" + rt.key else []), "--", *rt.cmd(units)]
                    env = pcmon_env(NO_DAEMON)
                else:
                    cmd, env = perf_record_cmd(hz, os.path.join(TMP, f"{rt.key}.perf.data"), rt.cmd(units)), None
            r = run(cmd, env=env)
            d = doc_with(r.out, "units")
            if r.rc != 0 or d is None:
                runs[key].append({"error": r.why()})
                continue
            x = {"cpu_s": d["cpu_s"], "wall_s": d["wall_s"], "units": d["units"]}
            if tool:
                x["samples"] = samples_of(tool, r)
            if tool == "pcmon":
                doc = doc_with(r.out, "summary")
                x[f"{rt.key}_pct"] = rt.pct(doc)
                n = doc["summary"].get("counted") if doc else None
                x[rt.cut_key] = (100 * doc["summary"]["cut_short_by_reason"].get(rt.cut, 0) / n if n else None)
            runs[key].append(x)
    if rt.bare_last:  # (one bare run after the others too)
        r = run(rt.cmd(units))
        d = doc_with(r.out, "units")
        runs["bare"].append({"cpu_s": d["cpu_s"], "wall_s": d["wall_s"], "units": d["units"]} if d
                            else {"error": r.why()})
    bare = [x for x in runs["bare"] if "cpu_s" in x]
    if not bare:
        raise RuntimeError(f"{rt.key}: the program failed to run bare: " + runs["bare"][0].get("error", "?"))
    bare_cpu = statistics.median(x["cpu_s"] for x in bare)
    bare_wall = statistics.median(x["wall_s"] for x in bare)
    out = {"units": units, "bare_cpu_s": stats([x["cpu_s"] for x in bare]),
           "bare_wall_s": stats([x["wall_s"] for x in bare]), "cells": {}, "sessions": {}, "runs": runs}
    for key, rs in runs.items():
        if key == "bare":
            continue
        ok = [x for x in rs if "cpu_s" in x]
        out["cells"][key] = {
            "cpu_ratio": stats([x["cpu_s"] / bare_cpu for x in ok]),
            "wall_ratio": stats([x["wall_s"] / bare_wall for x in ok]),
            "samples": stats([x.get("samples") for x in ok]),
            f"{rt.key}_pct": stats([x.get(f"{rt.key}_pct") for x in ok]),
            rt.cut_key: stats([x.get(rt.cut_key) for x in ok]),
            "errors": [x["error"] for x in rs if "error" in x],
        }
    # the profilers' own cost, attached by pid to a long run of the same program
    long_run = rt.cmd(10**12, WINDOW_S + 60)
    for hz, us in rates:
        for what, opts in ((rt.key, ()), ("no-" + rt.key, (rt.off,))):
            key = rt.cell("pcmon", what, hz)
            log(f"{rt.key}: pcmond session, {key}")
            out["sessions"][key] = guarded(pcmond_session, long_run, "virtual", us, unwind="auto",
                                           opts=opts)
        log(f"{rt.key}: perf record session at {hz} Hz")
        out["sessions"][rt.cell("perf", None, hz)] = ({"error": tool_missing("perf")} if tool_missing("perf")
                                                     else guarded(perf_session, hz, long_run))
    return out


def java_frames():
    return runtime_frames(JAVA)


def node_frames():
    return runtime_frames(NODE)


HEAPTRACK = shutil.which("heaptrack")
MEMLEAK = shutil.which("memleak") or (os.path.exists("/usr/sbin/memleak") and "/usr/sbin/memleak")
# mallocwork's units: each a malloc and a free (a tenth kept a while); with work, 2 us of
# arithmetic beside each (a program that does something with what it allocates)
ALLOC_UNITS = {"malloc only": (400000, 0), "2 us of work a malloc": (100000, 2000)}
ALLOC_CELLS = ("pcmon --alloc", "pcmon --alloc, sampling too", "heaptrack")


def alloc_cmd(units, work_ns):
    return [os.path.join(BENCH, "mallocwork"), str(units), str(work_ns)]


def allocations():
    """mallocwork bare, under pcmon --alloc at the default rate (without and with sampling
    beside it) and under heaptrack, in the same run: the program's own CPU and wall time for
    the same units over bare's, for a program that only allocates and one that works between
    its allocations; libbpf-tools' memleak where there is one."""
    out = {"units": {}, "cells": {}, "runs": {}}
    for prog, (units, work) in ALLOC_UNITS.items():
        cmd = alloc_cmd(units, work)
        runs = {"bare": [], **{c: [] for c in ALLOC_CELLS}}
        for rep in range(REPS):
            log(f"allocations ({prog}): repetition {rep + 1}/{REPS}")
            for cell in ["bare", *ALLOC_CELLS[rep % 3:], *ALLOC_CELLS[:rep % 3]]:
                env = None
                if cell == "bare":
                    c = cmd
                elif cell == "heaptrack":
                    if not HEAPTRACK:
                        runs[cell].append({"error": "heaptrack not installed (make deps)"})
                        continue
                    c = [HEAPTRACK, "-o", os.path.join(TMP, "heaptrack"), *cmd]
                else:
                    c = [PCMON, "run", "--json", *(["--no-sample"] if cell == "pcmon --alloc" else []),
                         "--alloc", "--", *cmd]
                    env = pcmon_env(NO_DAEMON)
                r = run(c, env=env)
                d = doc_with(r.out, "units")
                if r.rc != 0 or d is None:
                    runs[cell].append({"error": r.why()})
                    continue
                x = {"cpu_s": d["cpu_s"], "wall_s": d["wall_s"]}
                doc = doc_with(r.out, "alloc") if cell.startswith("pcmon") else None
                if doc:
                    x["samples"] = doc["alloc"]["summary"].get("samples")
                    x["calls"] = doc["alloc"]["summary"].get("calls")
                runs[cell].append(x)
        bare = [x for x in runs["bare"] if "cpu_s" in x]
        if not bare:
            raise RuntimeError("mallocwork failed to run bare: " + runs["bare"][0].get("error", "?"))
        bcpu = statistics.median(x["cpu_s"] for x in bare)
        bwall = statistics.median(x["wall_s"] for x in bare)
        out["units"][prog] = {"units": units, "work_ns": work, "bare_cpu_s": stats([x["cpu_s"] for x in bare]),
                              "bare_wall_s": stats([x["wall_s"] for x in bare])}
        out["cells"][prog] = {}
        for cell in ALLOC_CELLS:
            ok = [x for x in runs[cell] if "cpu_s" in x]
            out["cells"][prog][cell] = {
                "cpu_ratio": stats([x["cpu_s"] / bcpu for x in ok]),
                "wall_ratio": stats([x["wall_s"] / bwall for x in ok]),
                "ns_per_unit": stats([(x["wall_s"] - bwall) * 1e9 / units for x in ok]),
                "samples": stats([x.get("samples") for x in ok if x.get("samples") is not None]),
                "calls": stats([x.get("calls") for x in ok if x.get("calls") is not None]),
                "errors": [x["error"] for x in runs[cell] if "error" in x],
            }
        out["runs"][prog] = runs
    out["memleak"] = MEMLEAK or None
    return out


# (the share of samples that carry Python frames: the outermost Python procedure's deep
# count, every sample of pywork's work running under main; python_unknown flags the rest)
PYTHON = Runtime("python", "Python", pywork_cmd,
                 lambda: None if os.path.exists(PY311) else f"no {PY311} (make deps installs python3.11)",
                 "--no-python", "py.", "python_unknown", 5000, min_units=1000, fp=False,
                 cut_key="unknown_pct", bare_last=True)


def python_frames():
    """A CPython 3.11 program of pure Python work (bench/pywork.py, eight calls deep) as
    runtime_frames() runs JavaWork (without --unwind fp); then one row a version: each of
    pyenv's CPython builds there is, a fresh pcmond at 1 kHz attached by pid."""
    out = runtime_frames(PYTHON)
    if "error" in out:
        return out
    out["versions"] = {}
    for v, py in pyenv_pythons().items():
        log(f"python: pcmond session, CPython {v} ({py})")
        out["versions"][v] = guarded(pcmond_session, [py, PYWORK, str(10**9), str(WINDOW_S + 60)],
                                     "virtual", RATES[1][1], unwind="auto", settle=1, steady=PY_STEADY_S)
    return out


PYENV = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
PY_VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
# after a version's window, pcmond's CPU over this many more seconds: its steady cost, apart
# from the first read of that build's libpython (pyenv's carry DWARF: about 0.6 s of CPU)
PY_STEADY_S = 5


def pyenv_pythons():
    """The newest of pyenv's builds of each of PY_VERSIONS there is, by version."""
    found = {}
    for v in PY_VERSIONS:
        exes = glob.glob(os.path.join(PYENV, "versions", v + ".*", "bin", "python" + v))
        key = lambda e: [int(x) for x in e.split("/versions/")[1].split("/")[0].split(".") if x.isdigit()]
        if exes:
            found[v] = max(exes, key=key)
    return found


def churn():
    """pcmond --all at 19 Hz on a compile loop, then perf record -a -g at the same rate on the
    same loop (bench/soak.py, for BENCH_CHURN_S each: `make soak` is its 10-minute form)."""
    if CHURN_S <= 0:
        return {"error": "BENCH_CHURN_S=0: no churn to measure"}
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import soak
    soak.SOAK_S, soak.HZ, soak.STEP_S, soak.PEER_S = CHURN_S, CHURN_HZ, CHURN_S / 4, CHURN_S
    r = soak.soak()
    return {"pcmond": {k: v for k, v in r.items() if k != "series"}, "perf": soak.peer()}


# results.json's keys that are not a section's figures
META = ("environment", "section_s", "calibration", "measured", "total_s", "baseline", "only", "alone")


def upgrade(prev):
    """The results of an earlier run with "measured" (section -> the run that measured it),
    also from a results.json written before the forms (its "alone" list: sections measured
    by BENCH_ONLY; the others by the run in "environment"), whose scale_peers held bpftrace's
    row too."""
    prev = dict(prev)
    if "measured" not in prev:
        env = prev.get("environment", {})
        alone = prev.get("alone") or ([prev["only"]] if prev.get("only") else [])
        if isinstance(prev.get("scale_peers"), dict) and "bpftrace" in prev["scale_peers"]:
            prev["scale_peers"] = dict(prev["scale_peers"])
            prev["scale_bpftrace"] = prev["scale_peers"].pop("bpftrace")
        prev["measured"] = {}
        for name in prev:
            if name in META:
                continue
            o = next((o for o in alone if name in o.get("sections", ())), None)
            src = o or env
            prev["measured"][name] = {
                "by": "BENCH_ONLY" if o else "make bench", "date": src.get("date"),
                "loadavg_start": src.get("loadavg_start"),
                "s": prev.get("section_s", {}).get("scale_peers" if name == "scale_bpftrace" else name),
                "calibration": src.get("calibration") if o else prev.get("calibration")}
    for k in ("only", "alone"):
        prev.pop(k, None)
    return prev


# No path of this machine in what is committed: the tree's own path is ".", the run's
# temporary directory "<tmp>", the baseline's "<baseline>", a home directory "~", and any
# other path under these roots "<path>"
MACHINE_PATH = re.compile(r"(?<![\w.~<-])/(?:tmp|var/tmp|work|home|root|run/user|srv|mnt)\b(?:/[^\s'\":,;)\]}>]*)?")


def homes():
    import pwd
    out = {os.path.expanduser("~")}
    for user in filter(None, (os.environ.get("SUDO_USER"), os.environ.get("USER"))):
        try:
            out.add(pwd.getpwnam(user).pw_dir)
        except KeyError:
            pass
    return [h for h in out if h and h != "/"]


def unpath(text):
    for path, name in ((TMP, "<tmp>"), (BASELINE, "<baseline>"), (ROOT, "."),
                       *((h, "~") for h in homes())):
        if path:  # the whole path, not the start of a longer name (/root, not /rootfs)
            text = re.sub(re.escape(path) + r"(?![\w.-])", name, text)
    return MACHINE_PATH.sub("<path>", text)


def scrub(x):
    """x (results) with every string unpath'd."""
    if isinstance(x, str):
        return unpath(x)
    if isinstance(x, dict):
        return {k: scrub(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [scrub(v) for v in x]
    return x


def machine_paths(text):
    """The paths of this machine left in text (none, once scrubbed)."""
    found = MACHINE_PATH.findall(text)
    return found + [p for p in (TMP, BASELINE, ROOT, *homes())
                    if p and re.search(re.escape(p) + r"(?![\w.-])", text)]


def main():
    if os.geteuid() != 0:
        print("make bench: must run as root (BPF, perf events, /proc of other processes)", file=sys.stderr)
        return 1
    if FORM not in ("default", "full"):
        print(f"make bench: BENCH_FORM={FORM}: the forms are default (make bench) and full "
              "(make bench-full)", file=sys.stderr)
        return 1
    if BASELINE and baseline_missing():
        print(f"make bench: {baseline_missing()}", file=sys.stderr)
        return 1
    if BASELINE and FORM != "full" and not ONLY:
        print("make bench: BENCH_BASELINE adds minutes to every section it compares: use it with "
              "make bench-full, or with BENCH_ONLY (e.g. BENCH_ONLY=cost,pingpong,calls)", file=sys.stderr)
        return 1
    missing_tools = [n for n, t in (("perf", PERF), ("bpftrace", BPFTRACE), ("funclatency", FUNCLATENCY),
                                    ("offcputime", OFFCPUTIME), ("nm", NM)) if not t]
    if missing_tools:
        log(f"missing: {', '.join(missing_tools)} (make deps installs them): their cells will say FAILED")
    by = f"BENCH_ONLY={','.join(ONLY)}" if ONLY else "make bench-full" if FORM == "full" else "make bench"
    res = {"environment": {
        "form": by, "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "cpus": os.cpu_count(),
        "kernel": os.uname().release, "loadavg_start": " ".join(open("/proc/loadavg").read().split()[:3]),
        "perf": PERF and version_of([PERF, "--version"]),
        "bpftrace": BPFTRACE and version_of([BPFTRACE, "--version"]),
        "reps": REPS, "work_s": WORK_S, "window_s": WINDOW_S}, "section_s": {}, "measured": {}}
    # the sections this run does not measure keep their figures from the run that did
    try:
        with open(RESULTS) as f:
            prev = upgrade(json.load(f))
    except (OSError, ValueError):
        prev = {"measured": {}}
    if BASELINE:
        res["baseline"] = {"tree": BASELINE, "commit": commit_of(BASELINE), "this_commit": commit_of(ROOT),
                           "noise_rule": NOISE_RULE, "sections": {}}
    rc = 0
    named = set()  # the sections main runs or keeps, to check BENCH_ONLY's names against

    def wanted(name):
        if name == "calibration":
            return True
        if ONLY:
            return name in ONLY
        if name == "churn" and CHURN_S <= 0:
            return False
        return FORM == "full" or name not in FULL_ONLY

    def section(name, fn, *args):
        nonlocal rc
        named.add(name)
        if not wanted(name):
            if name in prev and name in prev["measured"]:
                res[name], res["measured"][name] = prev[name], prev["measured"][name]
            return
        t0 = time.monotonic()
        try:
            res[name] = fn(*args)
            if BASELINE and isinstance(res[name], dict) and "baseline" in res[name]:
                # the baseline's measurements go with the comparison, not in the section's table
                res["baseline"]["sections"][name] = res[name].pop("baseline")
        except Exception as e:  # noqa: BLE001 - report and go on with the other sections
            traceback.print_exc()
            res[name] = {"error": f"{type(e).__name__}: {e}"}
            rc = 1  # and its table says FAILED
        res["section_s"][name] = time.monotonic() - t0
        if name != "calibration":
            res["measured"][name] = {"by": by, "date": res["environment"]["date"],
                                     "loadavg_start": res["environment"]["loadavg_start"],
                                     "s": res["section_s"][name], "calibration": res.get("calibration")}

    try:
        section("calibration", calibrate)
        cal = res["calibration"]
        if "error" in cal:
            raise SystemExit("calibration failed: " + cal["error"])
        dwarf_err = dwarf_probe()
        # the order they run in; FULL_ONLY says which make bench leaves to make bench-full
        section("scale", scale)
        section("cost", cost, dwarf_err)
        section("pingpong", pingpong, cal)
        section("slowdown", slowdown, cal, dwarf_err)
        section("accuracy", accuracy)
        section("deep_stacks", deep_stacks)
        section("calls", call_counting)
        section("call_times", call_times)
        section("limits", limits, cal)
        section("scale_peers", scale_peers)
        section("scale_bpftrace", scale_bpftrace)
        section("fleet", fleet, cal)
        section("python", python_frames)
        section("java", java_frames)
        section("node", node_frames)
        section("alloc", allocations)
        section("churn", churn)
    finally:
        res["total_s"] = time.monotonic() - T_START
        for name, m in prev["measured"].items():
            if name not in res["measured"] and name in prev:  # the run stopped before it
                res[name], res["measured"][name] = prev[name], m
        if BASELINE:
            res["baseline"]["comparison"] = comparison(res["baseline"]["sections"])
            res["baseline"]["baseline_s"] = BASELINE_S
        # what is written and committed names no path of this machine
        res = scrub(res)
        text = table(res)
        print(text)
        if BASELINE:
            print("\n" + baseline_table(res))
            # a baseline run that failed is a failed cell of the comparison
            bad = [f"{name}: {key}" for name, part in res["baseline"]["sections"].items()
                   for key, c in part.get("cells", {}).items()
                   if (c.get("errors") or not c.get("baseline")) and not predates(c)]
            if bad:
                print(f"make bench: BENCH_BASELINE's runs FAILED in {', '.join(bad)}", file=sys.stderr)
                rc = 1
        out = json.dumps(res, indent=1, default=str)
        left = machine_paths(out) + machine_paths(text)
        if left:
            print(f"make bench: not written, a path of this machine is left in it: {left[:5]}", file=sys.stderr)
            rc = 1
        else:
            with open(RESULTS, "w") as f:
                f.write(out)
            update_readme(text)
        shutil.rmtree(TMP, ignore_errors=True)
    unknown = [x for x in ONLY if x not in named]
    if unknown:
        print(f"make bench: BENCH_ONLY names no section {', '.join(unknown)} (the sections: "
              f"{', '.join(sorted(named - {'calibration'}))})", file=sys.stderr)
        rc = 1
    unmeasured = [l.strip() for l in text.splitlines() if "not measured yet" in l]
    if unmeasured:
        print(f"make bench: {len(unmeasured)} line(s) of the table are not measured yet (not a failure of "
              "this run, but not a table to commit):", *unmeasured, sep="\n  ", file=sys.stderr)
    fails = table_failures(text)
    if fails:
        print(f"make bench: {len(fails)} line{'s' if len(fails) > 1 else ''} of the table FAILED "
              "(a kept section's failure counts too: run the form that measures it):", file=sys.stderr)
        for line in fails:
            print(f"  {line[:160]}", file=sys.stderr)
        rc = 1
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
