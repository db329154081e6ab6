#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The whole engine under ASan/UBSan: `pcmon run` built with sanitizers (.output/pcmon-asan)
over workloads that take every path: fp and dwarf, REAL, kernel frames, inlines, split
debug info, marked and declared sections, dlopen, WHEN, forks, truncation."""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import lib
from lib import ROOT, Daemon, pcmon, run_tests, workload

ASAN = os.path.join(ROOT, ".output", "pcmon-asan")
ASAN_D = os.path.join(ROOT, ".output", "pcmond-asan")

LEGS_LINE = next(i for i, l in enumerate(open(os.path.join(os.path.dirname(__file__), "..",
                                                         "workloads", "legs.c")), 1)
                 if "req_begin(large ? LARGE : SMALL);" in l)
SCENARIOS = [
    ["--interval", "500", "--", workload("threefn"), "0.5"],
    ["--interval", "500", "--", workload("threefn_nobid"), "0.5"],  # (no build-id)
    ["--unwind", "fp", "--real", "--kernel", "--interval", "500", "--", workload("spinsleep"), "0.5"],
    ["--real", "--interval", "500", "--", workload("threads3"), "0.5"],
    ["--critical", "a=*->crit.my_alloc->*", "--interval", "500", "--", workload("crit"), "0.5"],
    ["--interval", "500", "--", workload("crit_dlopen"), "0.5"],
    ["--when", ":callers.mid->callers.leaf", "--interval", "500", "--", workload("callers"), "0.5"],
    ["--interval", "500", "--", workload("inlined_stripped"), "0.5"],
    ["--kernel", "--interval", "500", "--", workload("forker"), "0.5"],
    ["--interval", "500", "--", workload("deeprec"), "0.5"],
    ["--unwind", "fp", "--interval", "500", "--", workload("deeprec"), "0.5"],
    # call counting beside sampling: recursion, longjmp, a thread exiting inside, a library
    # loaded later
    ["--count", "calls.*", "--interval", "500", "--", workload("calls"), "1"],
    ["--count", "libcritlib.so.lib_work", "--virtual", "--", workload("crit_dlopen"), "0.5"],
    # probe nodes, legs across threads, histograms, USDT and FILE:LINE nodes
    ["--node", "legs.req_begin", "--hist-arg", "0", "--node", "legs.end_small", "--node",
     "legs:tick", "--node", f"legs.c:{LEGS_LINE}", "--leg", "1:2", "--hist", "node:1,log", "--hist",
     "leg:1,linear,8,1000000,0", "--add", "successor", "--", workload("legs")],
    # tail profiles: samples held and filed, a percentile, abandoned instances, dwarf's
    # samples before their records
    ["--interval", "1000", "--node", "tailreq.req_begin", "--node", "tailreq.req_end", "--leg",
     "1:2", "--tail", "1", "--", workload("tailreq"), "300", "5", "abandon"],
    ["--unwind", "dwarf", "--interval", "1000", "--node", "tailreq.req_begin", "--node",
     "tailreq.req_end", "--leg", "1:2", "--tail", "1:3ms", "--", workload("tailreq"), "300"],
    # allocations beside sampling: sampled blocks freed, kept, reallocated
    ["--alloc", "--alloc-rate", "65536", "--interval", "500", "--", workload("allocs"), "0.5"],
]
# JavaScript frames (docs/node.md), where there is a node: V8's heap read, inlining, REAL
NODE = shutil.which("node")
JSPHASES = os.path.join(os.path.dirname(__file__), "..", "workloads", "node", "jsphases.js")
if NODE:
    SCENARIOS += [
        ["--real", "--interval", "500", "--", NODE, JSPHASES, "0.5"],
        ["--unwind", "fp", "--interval", "500", "--", NODE, JSPHASES, "0.5"],
    ]


def test_engine_paths_are_clean_under_sanitizers():
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    env.pop("PCMON_SOCKET", None)
    env["PCMON_SOCKET"] = "/nonexistent/pcmond.sock"
    for args in SCENARIOS:
        p = subprocess.run([ASAN, "run", "--json", *args], env=env, capture_output=True,
                           text=True, errors="replace", timeout=120)
        bad = [l for l in p.stderr.splitlines()
               if "Sanitizer" in l or "runtime error" in l]
        assert not bad, (args, "\n".join(p.stderr.splitlines()[-40:]))
        assert p.returncode == 0, (args, p.returncode, p.stderr[-2000:])
        assert '"summary"' in p.stdout, args


def test_daemon_is_clean_under_sanitizers():
    """pcmond under ASan/UBSan: targets, listings, abuse of the protocol, a restart that
    reloads saved results with a configuration file and reloads that on SIGHUP (a broken
    one, then an edit), and a clean exit with no leak."""
    old = lib.PCMOND
    lib.PCMOND = ASAN_D
    os.environ["ASAN_OPTIONS"] = "detect_leaks=1"
    os.environ["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    try:
        d = Daemon().start()
        sp = subprocess.Popen([workload("spinner"), "30"], stdout=subprocess.PIPE, text=True)
        try:
            sp.stdout.readline()
            tid = pcmon("start", "--pid", sp.pid, "--real", "--interval", 1000,
                        "--critical", "s=spinner.spin_here", sock=d.sock, check=0).stdout.strip()
            pcmon("run", "--interval", 1000, "--", workload("crit"), 0.5, sock=d.sock, check=0)
            pcmon("run", "--count", "calls.rec*", "--", workload("calls"), 1, sock=d.sock, check=0)
            pcmon("run", "--alloc", "--", workload("allocs"), 0.5, sock=d.sock, check=0)
            pcmon("node", "add", tid, "spinner.spin_here", sock=d.sock, check=0)
            pcmon("node", "add", tid, "spinner.spin_here%return", "--hist-arg", "0", sock=d.sock,
                  check=0)
            pcmon("leg", "add", tid, "1", "2", sock=d.sock, check=0)
            pcmon("hist", "add", tid, "leg", "1", "--log", sock=d.sock, check=0)
            pcmon("tables", tid, sock=d.sock, check=0)
            for args in (["list", tid, "--when", "main->*"], ["targets"], ["status"],
                         ["pause", tid], ["resume", tid], ["zero", tid], ["stop", tid],
                         ["list", tid, "--json"], ["list", "1", "--critical", "x=*"],
                         ["list", "2", "--lines", "crit.main"], ["list", tid, "--lines", "spin_here"],
                         ["profil", tid, "--offset", "spin_here", "--scale", "0x8000"],
                         ["profil", "2", "--offset", "crit+0x1000", "--scale", "2",
                          "--bufsiz", "64"]):
                pcmon(*args, sock=d.sock, check=0)
            # the exports, both halves sanitized: stacks in pcmond, the writers in the CLI
            aenv = dict(os.environ, PCMON_SOCKET=d.sock)
            for args in (["export", tid, "--format", "folded"], ["export", tid, "--format", "json"],
                         ["export", "2", "--format", "pprof", "-o", os.path.join(d.dir, "p.gz")],
                         ["flamegraph", "2", "-o", os.path.join(d.dir, "f.svg")],
                         ["top", "-b", "-n", "2", "-d", "0.2", "--pid", str(sp.pid)]):
                p = subprocess.run([ASAN, *args], env=aenv, capture_output=True, text=True,
                                   errors="replace", timeout=120)
                assert p.returncode == 0 and "Sanitizer" not in p.stderr and \
                    "runtime error" not in p.stderr, (args, p.stderr[-3000:])
            d.request(b"garbage\n{\"v\":1}\n{\"v\":1,\"cmd\":\"nope\"}\n"
                      + b"{\"v\":1,\"cmd\":\"list\",\"target\":7}\n")
        finally:
            sp.kill()
            sp.wait()
        assert d.stop() == 0, d.logtext()
        assert "Sanitizer" not in d.logtext() and "runtime error" not in d.logtext(), d.logtext()
        conf = os.path.join(d.dir, "pcmond.conf")
        with open(conf, "w") as f:
            f.write("[daemon]\nuser-targets = 4\n[target cfg]\nall = yes\ninterval = 20000\n")
        d2 = Daemon(state_dir=d.state, args=["--config", conf])
        d2.sock, d2.dir = d.sock, d.dir
        d2.start()
        pcmon("list", tid, sock=d2.sock, check=0)
        pcmon("drop", tid, sock=d2.sock, check=0)
        for text, word in (("[target cfg]\nall = yes\ninterval = x\n", "not reloaded"),
                           ("[daemon]\nuser-targets = 5\n[target cfg]\nall = yes\n"
                            "interval = 30000\n[target cg]\ncgroup = /nonexistent\n",
                            ": reloaded")):
            with open(conf, "w") as f:
                f.write(text)
            before = d2.logtext().count(word)
            d2.proc.send_signal(signal.SIGHUP)
            for _ in range(300):
                if d2.logtext().count(word) > before:
                    break
                time.sleep(0.05)
            assert d2.logtext().count(word) > before, d2.logtext()
        pcmon("list", "cfg", sock=d2.sock, check=0)
        assert d2.stop() == 0, d2.logtext()
        log = d2.logtext()
        assert "Sanitizer" not in log and "runtime error" not in log, log
    finally:
        lib.PCMOND = old


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
